"""Bad send arguments are refused by field before anything is written or reserved
(DESIGN.md "Quality bar"): presentation fields of sources and ready-made blocks included."""

from __future__ import annotations

import json
import os

import attrs
import pytest
import trio

from tidings import ArtifactRef
from tidings.actors import ControlBlock, MediaBlock
from tidings.errors import ArtifactError, ValidationError
from tidings.store import create_session as create_session_ops
from tidings.testing import MemoryRoute

from .conftest import rows


async def _refused_then_next_send_is_claimed(rt, session_id, route, db_path, send,
                                             error, field) -> None:
    """*send* fails with *error* naming *field*; nothing is written, the idle session's lane
    is not left reserved, and the next send is written claimed and delivered."""
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            with pytest.raises(error) as caught:
                await send(ctx.output)
            if isinstance(caught.value, ValidationError):
                assert caught.value.field == field
            else:
                assert str(caught.value).startswith(f"{field}:")
            assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
            assert rows(db_path, "SELECT count(*) FROM artifacts") == [(0,)]
            assert rt.dispatcher.lane(session_id) is None  # no reservation left behind
            handle = await ctx.output.send_text("next")
        assert await handle.wait() == "delivered"
    assert [o.text for o in route.delivered] == ["next"]


@pytest.mark.parametrize(("ref", "error", "field"), [
    (ArtifactRef(path="chart.png", metadata={"when": object()}), ValidationError,
     "source.metadata"),
    (ArtifactRef(path="chart.png", metadata="w=10"), ValidationError, "source.metadata"),
    (ArtifactRef(path="chart.png", summary=12), TypeError, "source.summary"),
    (ArtifactRef(path="chart.png", name=b"chart"), TypeError, "source.name"),
    (ArtifactRef(path="chart.png", media_type=1), TypeError, "source.media_type"),
])
async def test_an_artifact_refs_bad_presentation_is_refused_by_field(rt, bound, db_path, ref,
                                                                     error, field) -> None:
    session_id, route = bound
    await _refused_then_next_send_is_claimed(
        rt, session_id, route, db_path,
        lambda output: output.send_file(ref, history_policy="transient"), error, field)


async def test_an_artifact_ref_in_a_block_list_is_named_by_its_block(rt, bound,
                                                                     db_path) -> None:
    session_id, route = bound
    ref = ArtifactRef(path="chart.png", metadata={"when": object()})
    await _refused_then_next_send_is_claimed(
        rt, session_id, route, db_path,
        lambda output: output.send(["see:", {"type": "file", "source": ref}],
                                   history_policy="transient"),
        ValidationError, "blocks[1].source.metadata")


@pytest.mark.parametrize(("block", "error", "field"), [
    (ControlBlock("typing", {"until": object()}), ValidationError, "blocks[0].data"),
    (ControlBlock(7), TypeError, "blocks[0].action"),
])
async def test_a_ready_made_control_block_is_checked_like_a_mapping(rt, bound, db_path, block,
                                                                   error, field) -> None:
    session_id, route = bound
    await _refused_then_next_send_is_claimed(
        rt, session_id, route, db_path,
        lambda output: output.send(block, history_policy="transient"), error, field)


@pytest.mark.parametrize(("blocks", "field"), [
    (["see:", {"type": "file", "source": "../chart.png"}], "blocks[1].source"),
    ([{"type": "file", "source": "missing.png"}], "blocks[0].source"),
    (["a", {"type": "image", "source": "chart.png"}, "b",
      {"type": "file", "source": ArtifactRef(path="missing.pdf")}], "blocks[3].source.path"),
])
async def test_a_bad_source_in_a_block_list_is_named_by_its_block(rt, bound, db_path, blocks,
                                                                  field) -> None:
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send(blocks, history_policy="transient")
    assert caught.value.field == field
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


async def test_a_ready_made_media_block_obeys_the_roots(rt, bound, db_path, tmp_path,
                                                       workspace) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    session_id, route = bound
    escape = MediaBlock(type="file", location=str(outside), source_kind="path",
                        name="notes.txt", fallback="notes")
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send(["here:", escape], history_policy="transient")
        assert caught.value.field == "blocks[1].location"
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send(attrs.evolve(escape, type="text"),
                                  history_policy="transient")
        assert caught.value.field == "blocks[0].type"
        assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
        inside = attrs.evolve(escape, location=str(workspace / "chart.png"),
                              artifact_id="art_forged")
        handle = await ctx.output.send(inside, history_policy="transient")
    assert await handle.wait() == "delivered"
    [block] = route.delivered[0].blocks
    assert (block.location, block.name) == (str(workspace / "chart.png"), "notes.txt")
    assert rows(db_path, "SELECT artifact_id, location, name FROM artifacts") == [
        (block.artifact_id, str(workspace / "chart.png"), "notes.txt")]
    assert block.artifact_id != "art_forged"


_LONE_SURROGATE = "caf\udce9"
"""What ``os.fsdecode`` gives for a non-UTF-8 name: a ``str`` that no UTF-8 column can hold."""


@pytest.mark.parametrize(("send", "field"), [
    (lambda output: output.send_text(_LONE_SURROGATE), "text"),
    (lambda output: output.send_text("ok", history_text=_LONE_SURROGATE), "history_text"),
    (lambda output: output.progress(_LONE_SURROGATE), "text"),
    (lambda output: output.send(["ok", _LONE_SURROGATE]), "blocks[1].text"),
    (lambda output: output.send_file("chart.png", caption=_LONE_SURROGATE,
                                     history_policy="transient"), "caption"),
    (lambda output: output.send_text("ok", idempotency_key=_LONE_SURROGATE),
     "idempotency_key"),
])
async def test_text_that_utf8_cannot_hold_is_refused_by_field(rt, bound, db_path, send,
                                                             field) -> None:
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await send(ctx.output)
    assert caught.value.field == field
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


async def test_a_file_whose_name_is_not_utf8_is_refused_by_field(rt, bound, db_path,
                                                                workspace) -> None:
    name = os.fsdecode(b"caf\xe9.png")
    (workspace / name).write_bytes(b"\x89PNG")
    session_id, _ = bound
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(name, history_policy="transient")
        assert caught.value.field == "source"
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(ArtifactRef(path=name), history_policy="transient")
        assert caught.value.field == "source.path"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM artifacts") == [(0,)]


async def test_notices_and_user_messages_refuse_text_utf8_cannot_hold(rt, bound,
                                                                     db_path) -> None:
    session_id, _ = bound
    with pytest.raises(ValidationError) as caught:
        await rt.notify(session_id, _LONE_SURROGATE)
    assert caught.value.field == "text"
    with pytest.raises(ValidationError) as caught:
        await rt.record_user_message(session_id, _LONE_SURROGATE)
    assert caught.value.field == "text"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM messages") == [(0,)]


async def test_an_artifact_ref_path_is_a_path_and_its_url_a_url(rt, bound, db_path,
                                                               workspace) -> None:
    (workspace / "notes:v2.txt").write_text("v2")
    session_id, route = bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_file(ArtifactRef(path="notes:v2.txt"),
                                            history_policy="transient")
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(ArtifactRef(url="chart.png"), history_policy="transient")
        assert caught.value.field == "source.url"
        with pytest.raises(ArtifactError) as caught:
            await ctx.output.send_file(ArtifactRef(path="https://example.com/a.png"),
                                       history_policy="transient")
        assert caught.value.field == "source.path"
    assert await handle.wait() == "delivered"
    [block] = route.delivered[0].blocks
    assert (block.source_kind, block.location) == ("path", str(workspace / "notes:v2.txt"))
    assert rows(db_path, "SELECT count(*) FROM artifacts") == [(1,)]


@pytest.mark.parametrize("session_id", ["..", "/", "a/../..", ".", "parent/child"])
async def test_a_session_id_that_is_not_one_plain_name_gives_no_artifact_root(
        rt, db_path, workspace, session_id) -> None:
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    other = await rt.create_session(channel="web", session_id="parent")
    theirs = rt.artifact_root_for(other) / "child"
    os.makedirs(theirs)
    (theirs / "private.pdf").write_bytes(b"%PDF")
    # create_session refuses such ids now; a session made before that (an older database)
    # still gets no artifact root.
    await rt.store.commit(create_session_ops(session_id, core_id=rt.core_id, channel="web",
                                             now=rt.store.clock()))
    async with rt.open_turn(session_id) as ctx:
        for secret in (db_path, theirs / "private.pdf"):
            with pytest.raises(ArtifactError) as caught:
                await ctx.output.send_file(str(secret), history_policy="transient")
            assert caught.value.field == "source"
        handle = await ctx.output.send_file("chart.png", history_policy="transient")
    assert await handle.wait() == "unrouted"
    assert rows(db_path, "SELECT location FROM artifacts") == [(str(workspace / "chart.png"),)]


async def test_a_route_gets_the_metadata_that_was_written_not_the_callers_objects(
        rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "control"})
    route.stall()
    rt.router.bind(session_id, route)
    options = {"silent": False}
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            await ctx.output.send_text("first")
            await route.wait_attempted(1)  # the lane is busy: the next one waits in it
            handle = await ctx.output.send_text(
                "second", delivery_metadata={"options": options, "ids": (1, 2), 7: "seven"})
            control = await ctx.output.send({"type": "control", "action": "typing",
                                             "data": {"options": options}},
                                            history_policy="transient")
        options["silent"] = True  # the caller reuses its objects once send returned
        route.release()
        assert await handle.wait() == "delivered"
        assert await control.wait() == "delivered"
    written = {"options": {"silent": False}, "ids": [1, 2], "7": "seven"}
    assert rows(db_path, "SELECT metadata FROM outbox WHERE delivery_id = ?",
                handle.delivery_id) == [(json.dumps(written),)]
    second, third = route.delivered[1:]
    # read-only all the way down, as a restart reads it back: lists arrive as tuples
    assert dict(second.metadata) == {**written, "ids": (1, 2)}
    assert dict(third.blocks[0].data) == {"options": {"silent": False}}


async def test_a_control_only_send_that_writes_history_needs_history_text(rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:  # serial output turn: persist by default
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send({"type": "control", "action": "typing"})
        assert caught.value.field == "history_text"
        assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
        await ctx.output.send({"type": "control", "action": "typing"},
                              history_policy="transient")
        await ctx.output.send({"type": "control", "action": "pin"}, history_text="Pinned it.")
        await ctx.output.send(["ok", {"type": "control", "action": "typing"}])
    assert [m.text for m in await rt.history(session_id, model_context=True)] == [
        "Pinned it.", "ok"]


async def test_a_write_that_cannot_be_encoded_gives_the_lanes_reservation_back(
        rt, bound, db_path, monkeypatch) -> None:
    """Whatever fails while the pipeline builds a write after reserving the idle session's lane
    (here the blocks' JSON, which the SDK's checks should make impossible), the reservation is
    given back: the session's next send is still written claimed and delivered."""
    session_id, route = bound
    from tidings.actors import _pipeline

    real = _pipeline._blocks_json

    def fail_once(blocks):
        monkeypatch.setattr(_pipeline, "_blocks_json", real)
        raise TypeError("blocks: not JSON serialisable")

    monkeypatch.setattr(_pipeline, "_blocks_json", fail_once)
    await _refused_then_next_send_is_claimed(
        rt, session_id, route, db_path, lambda out: out.send_text("first"), TypeError,
        "blocks")


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
async def test_metadata_that_standard_json_cannot_hold_is_refused_by_field(rt, bound, db_path,
                                                                            number) -> None:
    """NaN and the infinities are not JSON: a delivery's, an artifact's or a session's metadata
    holding one is refused naming its field, and nothing is written (a client reading the row
    as JSON would otherwise fail on it)."""
    session_id, route = bound
    await _refused_then_next_send_is_claimed(
        rt, session_id, route, db_path,
        lambda out: out.send_text("x", delivery_metadata={"score": number}), ValidationError,
        "delivery_metadata")
    with pytest.raises(ValidationError) as caught:
        await rt.create_session(channel="web", metadata={"limits": [1, number]})
    assert caught.value.field == "metadata"
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(1,)]


class _BytesPath(os.PathLike):
    """A path-like object whose path is bytes (``os.fspath`` gives ``b"chart.png"``)."""

    def __fspath__(self) -> bytes:
        return b"chart.png"


@pytest.mark.parametrize(("send", "field"), [
    (lambda output: output.send_file(_BytesPath(), history_policy="transient"), "source"),
    (lambda output: output.send_file(ArtifactRef(path=_BytesPath()),
                                     history_policy="transient"), "source.path"),
    (lambda output: output.send(["x", {"type": "file", "source": _BytesPath()}],
                                history_policy="transient"), "blocks[1].source"),
])
async def test_a_path_like_source_of_bytes_is_refused_by_field(rt, bound, db_path, send,
                                                               field) -> None:
    """A path is written and sent as text: a path-like object that gives bytes is a
    ``TypeError`` naming its field, as a bytes source is (it failed inside the path rules,
    ``a bytes-like object is required, not 'str'``, naming nothing)."""
    session_id, route = bound
    await _refused_then_next_send_is_claimed(rt, session_id, route, db_path, send, TypeError,
                                             field)


@pytest.mark.parametrize("url", ["https://ex\tample.com/a.png", "https://example.com/a.png\n",
                                 "https://example.com/\ra.png", "https://example.com/a\x00.png",
                                 "https://example.com/a\x7f.png"])
@pytest.mark.parametrize(("source", "field"), [
    (lambda url: url, "source"),
    (lambda url: ArtifactRef(url=url), "source.url"),
])
async def test_a_url_with_a_control_character_is_refused_by_field(rt, bound, db_path, url,
                                                                  source, field) -> None:
    """The URL parser drops tabs and line breaks before it parses (``ex\\tample.com`` is
    checked as ``example.com``), so the URL that was checked was not the one stored and sent:
    a URL with an ASCII control character is refused, naming its field."""
    session_id, route = bound
    await _refused_then_next_send_is_claimed(
        rt, session_id, route, db_path,
        lambda output: output.send_image(source(url), history_policy="transient"),
        ArtifactError, field)


async def test_read_only_metadata_tidings_gave_out_is_taken_back(rt, db_path) -> None:
    """What tidings hands out read-only all the way down (an ``Outbound``'s ``metadata``, a
    session record's ``metadata``: nested read-only mappings and tuples) is JSON still: a host
    passing it on (a reply with the metadata it got, a child session with its parent's) has it
    written as plain JSON, not refused as 'must be JSON-serializable' for a ``mappingproxy``."""
    parent = await rt.create_session(channel="web", metadata={"user": {"tags": ["x"]}})
    route = MemoryRoute()
    rt.router.bind(parent, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(parent) as ctx:
            first = await ctx.output.send_text("a", delivery_metadata={"n": {"k": [1]}})
            assert await first.wait() == "delivered"
            again = await ctx.output.send_text("b", delivery_metadata=route.delivered[0].metadata)
        notice = await rt.notify(parent, "n", metadata=route.delivered[0].metadata)
        assert [await again.wait(), await notice.wait()] == ["delivered", "delivered"]
    assert rows(db_path, "SELECT metadata FROM outbox ORDER BY seq") == [
        ('{"n": {"k": [1]}}',)] * 3
    child = await rt.create_session(channel="web", parent_session_id=parent,
                                    metadata=(await rt.session(parent)).metadata)
    assert rows(db_path, "SELECT metadata FROM sessions WHERE session_id = ?", child) == [
        ('{"user": {"tags": ["x"]}}',)]


@pytest.mark.parametrize("url", ["https://example.com:99999/a.png",
                                 "https://example.com:abc/a.png", "http://example.com:-1/a"])
async def test_a_url_whose_port_is_no_port_is_refused_by_field(rt, bound, db_path,
                                                               url) -> None:
    """The URL parser reads the port only when asked: a port that is no port (out of range,
    not a number) passed the host check and was stored and sent, for every client to fail
    on; it is refused as not a valid URL, naming the field."""
    session_id, route = bound
    await _refused_then_next_send_is_claimed(
        rt, session_id, route, db_path,
        lambda output: output.send_file(url, history_policy="transient"), ArtifactError,
        "source")
