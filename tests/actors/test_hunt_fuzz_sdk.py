"""A model-based fuzz of the output SDK's acceptance rules (issue 3, README "Embedding").

Each example opens a fresh runtime and database, one or two turns (slot, mode, turn default
policy) with an accepting, failing or no route, makes a few calls on ``ctx.output`` /
``ctx.input``, and maybe one more after the last turn ended. A small model, written from
the documented rules and not from the code, predicts for every call whether it is refused
(the exception class and the field named, in the documented order: the source type and the
blocks' shape first, then policy and visibility, then paths) or accepted (which rows are
written: outbox, work item, history row with its flags, artifacts; what ``handle.wait()``
returns; what the history row says after a
failure). A refused call must write nothing.

Deterministic for CI (``derandomize``); ``TIDINGS_FUZZ_EXAMPLES=2000`` explores at random.
Where the documents were silent the model says so (fields not placed by the documented order
may be refused at any stage after the first; fallbacks of a file name it cannot know are not
checked); ``open_turn(history_policy=)`` is read as the default of both SDKs.
"""

from __future__ import annotations

import os
import pathlib
import sqlite3
import tempfile
from collections.abc import Mapping
from typing import Any

import attrs
import hypothesis.strategies as st
import trio
from hypothesis import HealthCheck, event, given, settings

import tidings
from tidings import ArtifactRef
from tidings.actors import ControlBlock, TextBlock
from tidings.errors import (
    ArtifactError,
    HistoryPolicyError,
    RuntimeClosedError,
    ValidationError,
)
from tidings.testing import MemoryRoute

from ..database_template import fresh_database

OMIT = "<omit>"
POLICIES = ("persist", "model_hidden", "transient")
MEDIA = ("image", "audio", "video", "file")
ALL_TYPES = ("text", *MEDIA, "control")


class RouteFailed(Exception):
    pass


# --- sources: (name, what it is to the model) ----------------------------------------------

@attrs.frozen
class Src:
    """A drawn source. ``kind``: ``ok`` (accepted), ``type`` (refused by type, stage 1),
    ``path`` (refused by the path rules, stage 3). ``name`` is the fallback file name."""

    tag: str
    kind: str
    name: str = ""
    ref_summary: str | None = None


SOURCES = {
    "ws": Src("ws", "ok", "pic.png"),
    "ws_abs": Src("ws_abs", "ok", "pic.png"),
    "ws_pathlib": Src("ws_pathlib", "ok", "pic.png"),
    "art": Src("art", "ok", "gen.png"),
    "url": Src("url", "ok", "a.png"),
    "ref_ws": Src("ref_ws", "ok", "pic.png", "ref summary"),
    "ref_url": Src("ref_url", "ok", "x.png"),
    "missing": Src("missing", "path"),
    "dotdot": Src("dotdot", "path"),
    "abs_out": Src("abs_out", "path"),
    "symlink": Src("symlink", "path"),
    "ftp": Src("ftp", "path"),
    "ref_out": Src("ref_out", "path"),
    "ref_symlink": Src("ref_symlink", "path"),
    "url_upper": Src("url_upper", "ok", "B.PNG"),
    "url_bare": Src("url_bare", "ok"),   # no file name: its fallback is not checked
    "link_art": Src("link_art", "ok"),   # the link's name or its target's: not checked
    "dir": Src("dir", "path"),
    "no_host": Src("no_host", "path"),
    "javascript": Src("javascript", "path"),
    "ref_both": Src("ref_both", "path"),
    "ref_none": Src("ref_none", "path", ref_summary="nothing"),
    "dict": Src("dict", "type"),
    "int": Src("int", "type"),
    "bytes": Src("bytes", "type"),
}


def make_source(tag: str, env: dict[str, pathlib.Path]) -> Any:
    ws, art, out = env["ws"], env["art"], env["out"]
    return {
        "ws": "pic.png",
        "ws_abs": str(ws / "pic.png"),
        "ws_pathlib": pathlib.Path("pic.png"),
        "art": str(art / "gen.png"),
        "url": "https://example.com/media/a.png",
        "ref_ws": ArtifactRef(path="pic.png", summary="ref summary"),
        "ref_url": ArtifactRef(url="https://example.com/x.png"),
        "missing": "nope.png",
        "dotdot": "../outside.png",
        "abs_out": str(out),
        "symlink": "link.png",
        "ftp": "ftp://example.com/a.png",
        "ref_out": ArtifactRef(path="../outside.png"),
        "ref_symlink": ArtifactRef(path="link.png"),
        "url_upper": "HTTPS://EXAMPLE.COM/B.PNG",
        "url_bare": "https://example.com",
        "link_art": "art_link.png",
        "dir": "sub",
        "no_host": "https:///a.png",
        "javascript": "javascript:alert(1)",
        "ref_both": ArtifactRef(path="pic.png", url="https://example.com/x.png"),
        "ref_none": ArtifactRef(summary="nothing"),
        "dict": {"path": "pic.png", "summary": "a chart"},
        "int": 42,
        "bytes": b"pic.png",
    }[tag]


# --- calls -----------------------------------------------------------------------------------

@attrs.frozen
class Call:
    sdk: str                 # output | input
    method: str              # send_text | send_<media> | progress | notice | send
    text: str = "hello"
    source: str | None = None
    caption: Any = OMIT
    summary: Any = OMIT
    blocks: Any = None       # for send: a description (see _blocks)
    kind: Any = OMIT
    controls: dict[str, Any] = attrs.field(factory=dict)


def _rarely_bad(good: list[Any], bad: list[Any], omit: bool = True) -> st.SearchStrategy:
    """Mostly omitted or good values, with a bad one now and then: most sends are accepted,
    so the written rows are checked as often as the refusals."""
    pick = st.integers(0, 19)

    def choose(n: int) -> st.SearchStrategy:
        if n == 0 and bad:
            return st.sampled_from(bad)
        if n < 6 or not omit:
            return st.sampled_from(good)
        return st.just(OMIT)

    return pick.flatmap(choose)


TEXTS = _rarely_bad(["hello", "second", "ünïcode"], ["bad\ud800", 7], omit=False)
CONTROL_VALUES = {
    "write_history": ([True, False], ["yes"]),
    "history_policy": (list(POLICIES), ["forever"]),
    "visible": ([True, False], []),
    "history_text": (["said in words"], [5]),
    "failure_history_text": (["it failed"], [b"x"]),
    "delivery_metadata": ([{"trace": "t1", "n": [1, 2], "o": {"a": None}}],
                          ["k=v", {"bad": float("nan")}]),
    "idempotency_key": (["k1", "k2"], [""]),
}
STATUS_CONTROLS = ("visible", "delivery_metadata", "idempotency_key", "history_policy")


@st.composite
def controls(draw, names=tuple(CONTROL_VALUES)) -> dict[str, Any]:
    chosen = {}
    for name in names:
        value = draw(_rarely_bad(*CONTROL_VALUES[name]))
        if value is not OMIT:
            chosen[name] = value
    return chosen


SOURCE_TAGS = st.one_of(
    st.sampled_from(sorted(tag for tag, src in SOURCES.items() if src.kind == "ok")),
    st.sampled_from(sorted(SOURCES)))

# A block description for send(): ("str", text) | ("text", text) | ("textobj", text)
# | ("media", type, source) | ("control",) | ("controlobj",) | ("badtype",) | ("int",)
GOOD_BLOCK = st.one_of(
    st.tuples(st.just("str"), TEXTS),
    st.tuples(st.just("text"), TEXTS),
    st.tuples(st.just("textobj"), TEXTS),
    st.tuples(st.just("media"), st.sampled_from(MEDIA), SOURCE_TAGS),
    st.tuples(st.just("control")),
    st.tuples(st.just("controlobj")),
)
BLOCK = st.integers(0, 9).flatmap(
    lambda n: st.sampled_from([("badtype",), ("int",)]) if n == 0 else GOOD_BLOCK)


@st.composite
def calls(draw) -> Call:
    sdk = draw(st.sampled_from(["output", "output", "input"]))
    method = draw(st.sampled_from(["send_text", "send_image", "send_file", "send_video",
                                   "progress", "notice", "send", "send"]))
    if method in ("progress", "notice"):
        ctl = draw(controls(STATUS_CONTROLS))
        if "history_policy" in ctl and draw(st.integers(0, 3)):
            del ctl["history_policy"]
        return Call(sdk, method, text=draw(TEXTS), controls=ctl)
    ctl = draw(controls())
    if method == "send_text":
        return Call(sdk, method, text=draw(TEXTS), controls=ctl)
    if method == "send":
        shape = draw(st.sampled_from(["one", "list"]))
        if shape == "one":
            blocks = ("one", draw(BLOCK))
        else:
            blocks = ("list", tuple(draw(st.lists(BLOCK, min_size=1, max_size=3))))
        kind = draw(_rarely_bad(["message", "progress", "notice"], ["status"]))
        return Call(sdk, method, blocks=blocks, kind=kind, controls=ctl)
    return Call(sdk, method, source=draw(SOURCE_TAGS),
                caption=draw(st.sampled_from([OMIT, "a caption"])),
                summary=draw(st.sampled_from([OMIT, "a summary"])), controls=ctl)


@st.composite
def turns(draw) -> dict[str, Any]:
    return {
        "slot": draw(st.sampled_from(["output", "input"])),
        "mode": draw(st.sampled_from(["serial", "serial", "parallel", "background"])),
        "turn_policy": draw(st.sampled_from([None, None, *POLICIES])),
        "calls": draw(st.lists(calls(), min_size=1, max_size=4)),
    }


@st.composite
def scenarios(draw) -> dict[str, Any]:
    return {
        "route": draw(st.sampled_from(["accept", "accept", "fail", "none"])),
        "turns": draw(st.lists(turns(), min_size=1, max_size=2)),
        "late": draw(st.one_of(st.none(), calls())),  # made on the last turn after it ended
    }


# --- the model -------------------------------------------------------------------------------

@attrs.frozen
class Refused:
    """Refused: ``options`` is a set of (exception class, field) any of which may be raised
    (the documented order fixes the stage, not the order inside one stage)."""

    options: frozenset[tuple[type, str]]


@attrs.frozen
class Accepted:
    repeat_of: int | None      # index of the original call when an idempotency key repeats
    policy: str
    visible: bool
    media: int                 # artifact records written
    outcome: str               # what wait() returns
    history_kind_text: bool    # the history row's kind is "text" (checked for text only)
    history_text: str | None   # the history row's text (None: not checked)
    failure_text: str | None   # what replaces it on failure
    outbound_text: str | None  # what an accepting route gets as text (None: not checked)


def turn_defaults(slot: str, mode: str, turn_policy: str | None) -> dict[str, str]:
    """The documented defaults: ``ctx.output`` in a serial output turn is ``persist``, else
    ``transient``; ``ctx.input`` is ``transient``; ``open_turn(history_policy=)`` sets the
    turn's default (of both SDKs)."""
    if turn_policy is not None:
        return {"output": turn_policy, "input": turn_policy}
    out = "persist" if slot == "output" and mode == "serial" else "transient"
    return {"output": out, "input": "transient"}


def open_refusal(mode: str, turn_policy: str | None) -> Refused | None:
    if turn_policy not in (None, "transient") and mode != "serial":
        return Refused(frozenset({(HistoryPolicyError, "history_policy")}))
    return None


def _blocks_of(call: Call) -> list[tuple]:
    if call.method == "send":
        shape, value = call.blocks
        return [value] if shape == "one" else list(value)
    if call.method == "send_text" or call.method in ("progress", "notice"):
        return [("str", call.text)]
    return [("media", call.method.removeprefix("send_"), call.source)]


def _shows_its_own_text(call: Call, block: tuple, single: bool) -> bool:
    """A media block's text fallback is its caption, else its summary (its ArtifactRef's),
    else the send's history_text: whether it is one of the first two."""
    caption = call.caption if single and call.caption is not OMIT else None
    summary = call.summary if single and call.summary is not OMIT else None
    summary = summary if summary is not None else SOURCES[block[2]].ref_summary
    return bool(caption or summary)


def model(call: Call, defaults: dict[str, str], mode: str, route: str,
          keys: dict[str, int]) -> Refused | Accepted:
    ctl = call.controls
    is_status_method = call.method in ("progress", "notice")
    kind = call.method if is_status_method else (
        "message" if call.kind is OMIT else call.kind)
    blocks = _blocks_of(call)
    single = call.method != "send"

    def field(index: int, name: str) -> str:
        return name if single else f"blocks[{index}].{name}"

    # Stage 0: a keyword the method does not take (progress/notice take no history_policy).
    if is_status_method and "history_policy" in ctl:
        return Refused(frozenset({(TypeError, "history_policy")}))

    # Stage 1: the source type and the blocks' shape (and the kind).
    stage1 = set()
    for index, block in enumerate(blocks):
        if block[0] in ("str", "text", "textobj"):
            name = "text" if single else (
                f"blocks[{index}]" if block[0] == "str" and not isinstance(block[1], str)
                else f"blocks[{index}].text")
            if not isinstance(block[1], str):
                stage1.add((TypeError, name))
            elif "\ud800" in block[1]:
                stage1.add((ValidationError, name))
        if block[0] == "media" and SOURCES[block[2]].kind == "type":
            stage1.add((TypeError, field(index, "source")))
        elif block[0] == "badtype":
            stage1.add((ValidationError, f"blocks[{index}].type"))
        elif block[0] == "int":
            stage1.add((TypeError, f"blocks[{index}]"))
    if kind not in ("message", "progress", "notice"):
        stage1.add((ValidationError, "kind"))
    if stage1:
        return Refused(frozenset(stage1))

    # Stage 2: policy and visibility (and the other request-wide fields).
    stage2 = set()
    write_history = ctl.get("write_history", None)
    history_policy = ctl.get("history_policy", None)
    visible = ctl.get("visible", True)
    history_text = ctl.get("history_text")
    failure_text = ctl.get("failure_history_text")
    for name in ("history_text", "failure_history_text"):
        if ctl.get(name) is not None and not isinstance(ctl[name], str):
            stage2.add((TypeError, name))
    if write_history not in (None, True, False):
        stage2.add((ValidationError, "write_history"))
    if visible not in (True, False):
        stage2.add((ValidationError, "visible"))
    policy: str | None
    if kind != "message":  # progress / notice: always transient, always visible
        if write_history is True or history_policy not in (None, "transient"):
            stage2.add((ValidationError, "history_policy"))
            stage2.add((ValidationError, "write_history"))
        if visible is False:
            stage2.add((ValidationError, "visible"))
        policy = "transient"
    elif history_policy is not None:
        policy = history_policy if history_policy in POLICIES else None
        if policy is None:
            stage2.add((ValidationError, "history_policy"))
        elif policy == "transient" and write_history is True:  # contradictory: refused
            stage2.add((ValidationError, "write_history"))
    elif write_history is not None:
        policy = "persist" if write_history is True else "transient"
    else:
        policy = defaults[call.sdk]
    if policy is not None:
        if policy == "transient" and visible is False and kind == "message":
            stage2.add((ValidationError, "visible"))
        if policy != "transient" and mode != "serial":
            stage2.add((HistoryPolicyError, "history_policy"))
        media = [b for b in blocks if b[0] == "media"]
        texts = [b for b in blocks if b[0] in ("str", "text", "textobj")]
        non_text = bool(media) or not texts
        if non_text and policy != "transient" and history_text is None:
            stage2.add((ValidationError, "history_text"))
        if isinstance(history_text, str) and policy == "transient" and not any(
                not _shows_its_own_text(call, block, single) for block in media):
            stage2.add((ValidationError, "history_text"))  # no row, no media fallback
        if failure_text is not None and (policy == "transient" or visible is False):
            stage2.add((ValidationError, "failure_history_text"))
    if ctl.get("idempotency_key") == "":
        stage2.add((ValidationError, "idempotency_key"))
    metadata = ctl.get("delivery_metadata")
    anywhere = set()  # not placed by the documented order: allowed at any stage after 1
    if metadata is not None and not (isinstance(metadata, dict) and "bad" not in metadata):
        anywhere.add((ValidationError, "delivery_metadata"))
    if stage2:
        return Refused(frozenset(stage2 | anywhere))
    assert policy is not None

    key = ctl.get("idempotency_key")
    if key is not None and key in keys and not anywhere:
        return Accepted(repeat_of=keys[key], policy=policy, visible=visible, media=0,
                        outcome="", history_kind_text=False, history_text=None,
                        failure_text=None, outbound_text=None)

    # Stage 3: paths.
    stage3 = set()
    for index, block in enumerate(blocks):
        if block[0] == "media" and SOURCES[block[2]].kind == "path":
            stage3.add((ArtifactError, field(index, "source")))
    if stage3 or anywhere:
        return Refused(frozenset(stage3 | anywhere))

    media = [b for b in blocks if b[0] == "media"]
    if not visible:
        outcome = "delivered"
    else:
        outcome = {"accept": "delivered", "fail": "failed", "none": "unrouted"}[route]
    texts = [b for b in blocks if b[0] in ("str", "text", "textobj")]
    delivery_text = None
    if len(blocks) == 1 and texts:
        delivery_text = texts[0][1]
    elif len(blocks) == 1 and media:
        src = SOURCES[media[0][2]]
        caption = None if call.caption is OMIT else call.caption
        summary = None if call.summary is OMIT else call.summary
        summary = summary if summary is not None else src.ref_summary
        delivery_text = caption or summary or history_text or src.name or None
    hist = history_text if history_text is not None else delivery_text
    return Accepted(repeat_of=None, policy=policy, visible=visible, media=len(media),
                    outcome=outcome, history_kind_text=not media and bool(texts),
                    history_text=hist, failure_text=failure_text,
                    outbound_text=delivery_text)


# --- running a call --------------------------------------------------------------------------

def build_block(block: tuple, env: dict[str, pathlib.Path]) -> Any:
    tag = block[0]
    if tag == "str":
        return block[1]
    if tag == "text":
        return {"type": "text", "text": block[1]}
    if tag == "textobj":
        return TextBlock(block[1])
    if tag == "media":
        return {"type": block[1], "source": make_source(block[2], env)}
    if tag == "control":
        return {"type": "control", "action": "typing", "data": {"on": True}}
    if tag == "controlobj":
        return ControlBlock("typing", {"on": True})
    if tag == "badtype":
        return {"type": "sticker", "text": "x"}
    return 5


async def perform(ctx: Any, call: Call, env: dict[str, pathlib.Path]) -> Any:
    sdk = getattr(ctx, call.sdk)
    ctl = dict(call.controls)
    if call.method in ("send_text", "progress", "notice"):
        return await getattr(sdk, call.method)(call.text, **ctl)
    if call.method == "send":
        shape, value = call.blocks
        blocks = (build_block(value, env) if shape == "one"
                  else [build_block(b, env) for b in value])
        if call.kind is not OMIT:
            ctl["kind"] = call.kind
        return await sdk.send(blocks, **ctl)
    extra = {name: value for name, value in (("caption", call.caption),
                                             ("summary", call.summary)) if value is not OMIT}
    return await getattr(sdk, call.method)(make_source(call.source, env), **extra, **ctl)


TABLES = ("outbox", "work_items", "messages", "artifacts", "turns")


def counts(db: pathlib.Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


def check_refused(expected: Refused, exc: BaseException, where: str) -> None:
    for cls, name in expected.options:
        if not isinstance(exc, cls):
            continue
        if isinstance(exc, ValidationError | HistoryPolicyError):
            if exc.field == name or exc.field.startswith(name + "."):  # source.path
                return
        elif name in str(exc):
            return
    raise AssertionError(f"{where}: expected one of "
                         f"{sorted((c.__name__, f) for c, f in expected.options)}, got "
                         f"{type(exc).__name__} {getattr(exc, 'field', None)!r}: {exc}")


async def run_scenario(scenario: dict[str, Any], base: pathlib.Path) -> None:
    ws = base / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "pic.png").write_bytes(b"\x89PNG")
    out = base / "outside.png"
    out.write_bytes(b"secret")
    os.symlink(out, ws / "link.png")
    db = fresh_database(base / "state" / "t.db")
    fail = RouteFailed("platform down") if scenario["route"] == "fail" else None
    route = MemoryRoute(capabilities=ALL_TYPES, fail=fail)
    with trio.fail_after(20):
        async with tidings.open_runtime(db, workspace=ws) as rt:
            sid = await rt.create_session(channel="web")
            art = rt.artifact_root_for(sid)
            art.mkdir(parents=True)
            (art / "gen.png").write_bytes(b"\x89PNG")
            os.symlink(art / "gen.png", ws / "art_link.png")
            env = {"ws": ws, "art": art, "out": out}
            if scenario["route"] != "none":
                rt.router.bind(sid, route)
            keys: dict[str, int] = {}
            results: list[tuple[Call, Accepted, Any]] = []
            repeats: list[tuple[Call, Any, Any]] = []
            last = None
            for turn in scenario["turns"]:
                last = await run_turn(rt, sid, db, turn, scenario["route"], env, keys,
                                      results, repeats)
            late = scenario["late"]
            if late is not None and last is not None:
                ctx, defaults, mode = last
                where = f"late {late}"
                expected = model(late, defaults, mode, scenario["route"], keys)
                before = counts(db)
                try:
                    handle = await perform(ctx, late, env)
                except (TypeError, ValueError, RuntimeError) as exc:
                    if not isinstance(exc, RuntimeClosedError):
                        if isinstance(expected, Accepted):
                            raise AssertionError(f"{where}: {exc!r}") from exc  # noqa: TRY004
                        check_refused(expected, exc, where)
                else:  # only a repeated key may answer (with the original, writing nothing)
                    assert isinstance(expected, Accepted), (where, "accepted after the end")
                    assert expected.repeat_of is not None, (where, "accepted after the end")
                    assert handle.delivery_id == results[expected.repeat_of][2].delivery_id
                assert counts(db) == before, f"{where}: wrote after the turn ended"
            await check_outcomes(rt, sid, route, scenario["route"], results, repeats)


async def run_turn(rt: Any, sid: str, db: pathlib.Path, turn: dict[str, Any], route: str,
                   env: dict[str, pathlib.Path], keys: dict[str, int],
                   results: list[tuple[Call, Accepted, Any]],
                   repeats: list[tuple[Call, Any, Any]]) -> tuple[Any, dict[str, str], str] | None:
    mode, slot, turn_policy = turn["mode"], turn["slot"], turn["turn_policy"]
    refusal = open_refusal(mode, turn_policy)
    before = counts(db)
    if refusal is not None:
        try:
            async with rt.open_turn(sid, slot=slot, mode=mode, history_policy=turn_policy):
                raise AssertionError("open_turn: expected a refusal")
        except (ValidationError, HistoryPolicyError) as exc:
            check_refused(refusal, exc, "open_turn")
        assert counts(db) == before, "open_turn: refused but wrote"
        return None
    defaults = turn_defaults(slot, mode, turn_policy)
    async with rt.open_turn(sid, slot=slot, mode=mode, history_policy=turn_policy) as ctx:
        for index, call in enumerate(turn["calls"]):
            where = f"call {index} {call} in {slot}/{mode}/{turn_policy}"
            expected = model(call, defaults, mode, route, keys)
            before = counts(db)
            try:
                handle = await perform(ctx, call, env)
            except (TypeError, ValueError, RuntimeError) as exc:
                if isinstance(expected, Accepted):
                    raise AssertionError(f"{where}: expected acceptance, got "  # noqa: TRY004
                                         f"{type(exc).__name__}: {exc}") from exc
                check_refused(expected, exc, where)
                event(f"refused {type(exc).__name__} {getattr(exc, 'field', '')}")
                assert counts(db) == before, f"{where}: refused but wrote"
                continue
            assert isinstance(expected, Accepted), (
                f"{where}: accepted, expected a refusal {expected}")
            after = counts(db)
            if expected.repeat_of is not None:
                original = results[expected.repeat_of][2]
                assert handle.delivery_id == original.delivery_id, where
                assert after == before, f"{where}: a repeated key wrote"
                repeats.append((call, handle, original))
                continue
            event(f"accepted {expected.policy} visible={expected.visible} "
                  f"media={expected.media} {expected.outcome}")
            grew = {t: after[t] - before[t] for t in TABLES}
            assert grew == {
                "outbox": 1, "work_items": 1,
                "messages": int(expected.policy != "transient"),
                "artifacts": expected.media, "turns": 0}, f"{where}: wrote {grew}"
            key = call.controls.get("idempotency_key")
            if key is not None:
                keys[key] = len(results)
            results.append((call, expected, handle))
    return ctx, defaults, mode


async def check_outcomes(rt: Any, sid: str, route: MemoryRoute, route_kind: str,
                         results: list[tuple[Call, Accepted, Any]],
                         repeats: list[tuple[Call, Any, Any]]) -> None:
    for call, expected, handle in results:
        where = f"{call}"
        assert await handle.wait() == expected.outcome, where
        status = await rt.delivery_status(handle.delivery_id)
        if not expected.visible:
            assert (status.outbox_status, status.attempts) == ("sent", 0), where
        history = {m.delivery_id: m for m in await rt.history(sid)}
        row = history.get(handle.delivery_id)
        if expected.policy == "transient":
            assert row is None, where
            continue
        assert row is not None, where
        assert (row.policy, row.visible, row.model_visible) == (
            expected.policy, expected.visible, expected.policy == "persist"), where
        if expected.history_kind_text:
            assert row.kind == "text", where
        text = expected.history_text
        if expected.outcome == "failed" and expected.failure_text is not None:
            text = expected.failure_text
        if text is not None:
            assert row.text == text, (where, row.text)
    for call, handle, original in repeats:
        assert await handle.wait() == await original.wait(), call
    delivered = {o.delivery_id: o for o in route.delivered}
    for call, expected, handle in results:
        if route_kind == "accept" and expected.visible:
            outbound = delivered[handle.delivery_id]
            assert outbound.session_id == sid
            metadata = call.controls.get("delivery_metadata") or {}
            assert _plain(outbound.metadata) == metadata, call
            if expected.outbound_text is not None:
                assert outbound.text == expected.outbound_text, (call, outbound.text)
        else:
            assert handle.delivery_id not in delivered, call


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


@settings(max_examples=int(os.environ.get("TIDINGS_FUZZ_EXAMPLES", "150")), deadline=None,
          derandomize="TIDINGS_FUZZ_EXAMPLES" not in os.environ, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scenarios())
def test_the_sdk_accepts_and_refuses_as_documented(scenario: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        trio.run(run_scenario, scenario, pathlib.Path(tmp))
