"""A sweep of the public API with bad input, one parameter at a time (README "Errors").

Every public callable of the runtime (``rt.*``, ``rt.router.*``, a turn's ``ctx.*`` and
``ctx.output.*``/``ctx.input.*``) and the public constructors (``ChannelConfig``,
``GatewayConfig``, the supervisor's specs, the channel types, the test doubles) is called with
valid arguments but one, which gets a value of the wrong type (an ``object()``, a ``bytes``, an
``int`` where a string is taken), a NaN, a negative or a huge int where a number is, an empty
string, or a lone surrogate. The promise: the call raises a ``TypeError`` whose message names
the parameter, a ``ValidationError`` whose ``field`` names it, or a ``LookupError`` for an
id that is not there; never an ``AttributeError``, ``KeyError``, ``IndexError``, a
``sqlite3`` error or an ``AssertionError`` from deep inside, and never a hang; and the
database gains no row (outbox, messages, sessions, events, work_items are counted before and
after each refused call).

The value types (``TextBlock``, ``ControlBlock``, ``ArtifactRef``) are checked where they are
used, so they are swept through a send (the field is ``blocks`` or ``source.<attribute>``).
A few values are sensible input for one parameter (an empty user message, a ``since``
before 1970); each such acceptance is listed in its case with the reason, so the sweep still
fails if anything else is accepted.

The existing sweeps (tests/actors/test_hunt_fuzz_sdk.py, the send rules;
tests/stress/test_hostile_inputs.py, chat ids and commands through a channel;
tests/actors/test_refusals_*.py, one rule each) go deep on one surface; this one is wide.
"""

from __future__ import annotations

import inspect
import io
import math
import pathlib
import sqlite3
from collections.abc import Callable
from typing import Any

import attrs
import pytest
import trio

import tidings
from tidings.actors import (
    ApprovalRequest,
    ArtifactRef,
    ControlBlock,
    Outbound,
    Prompt,
    TextBlock,
)
from tidings.channels import (
    AccessPolicy,
    ChannelConfig,
    ChannelIdentity,
    CommandAgent,
    Conversation,
    EchoAgent,
    GatewayChannel,
    GatewayConfig,
    Inbound,
    MemoryScope,
    TerminalChannel,
    ToolCall,
    boundary_note,
    compose_first_prompt,
    conversation_key,
    inbound_conversation_key,
    load_agent,
    parse_command,
    parse_conversation_key,
    status_text,
    who_text,
    workspace_name,
)
from tidings.errors import ValidationError
from tidings.store import open_store, prune_file, read_database
from tidings.supervisor import (
    Backoff,
    ChildSpec,
    FaultPlan,
    FaultRule,
    Intensity,
    open_supervisor,
    supervisor_child,
)
from tidings.testing import (
    CheckpointInjector,
    MemoryChannel,
    MemoryRoute,
    random_fault_plan,
)

from ..database_template import fresh_database

TABLES = ("outbox", "messages", "sessions", "events", "work_items")

OBJ = object()
VALUES: dict[str, Any] = {
    "object": OBJ,
    "bytes": b"x",
    "nan": math.nan,
    "negative": -1,
    "huge": 2**70,
    "empty": "",
    "surrogate": "\ud800",
    # for a parameter that takes several values (an iterable of ids, of texts)
    "lone-str": "abc",
    "[object]": [OBJ],
    "[bytes]": [b"x"],
    "[surrogate]": ["\ud800"],
    "[empty]": [""],
}

KINDS: dict[str, tuple[str, ...]] = {
    # an id or a name the runtime looks up or stores
    "id": ("object", "bytes", "huge", "empty", "surrogate"),
    # free text (an empty one may be fine: see the cases)
    "text": ("object", "bytes", "huge", "empty", "surrogate"),
    # a count, a seq, a limit
    "count": ("object", "bytes", "nan", "negative", "huge", "empty"),
    # seconds, a time
    "seconds": ("object", "bytes", "nan", "negative", "empty"),
    "map": ("object", "bytes", "huge", "empty"),
    "ids": ("object", "bytes", "huge", "lone-str", "[object]", "[bytes]", "[surrogate]",
            "[empty]"),
    "bool": ("object", "bytes", "nan", "huge", "empty"),
    "callable": ("object", "bytes", "huge", "empty"),
    "thing": ("object", "bytes", "huge", "empty"),
}


@attrs.frozen
class Env:
    rt: Any
    session_id: str
    route: MemoryRoute
    delivery_id: str
    token: Any
    ctx: Any = None


@attrs.frozen
class Case:
    """One callable: ``call(env, **kwargs)`` with ``good`` kwargs, each of ``params`` (name ->
    kind) swept with its kind's values. ``accepts``: ``"param=tag"`` -> why that value is
    sensible input there."""

    name: str
    call: Callable[..., Any]
    good: dict[str, Any]
    params: dict[str, str]
    accepts: dict[str, str] = attrs.field(factory=dict)
    fields: dict[str, str] = attrs.field(factory=dict)  # param -> the field named, if other
    in_turn: bool = False
    guard: float = 5.0


async def _maybe_await(result: Any) -> Any:
    if inspect.isawaitable(result):
        return await result
    return result


def rt_case(method: str, good: dict[str, Any], params: dict[str, str], **kw: Any) -> Case:
    async def call(env: Env, **kwargs: Any) -> Any:
        result = await _maybe_await(getattr(env.rt, method)(**kwargs))
        if hasattr(result, "__aenter__"):  # open_turn, hold_binds: entered, then left
            async with result:
                pass
        return result
    return Case(f"rt.{method}", call, good, params, **kw)


def router_case(method: str, good: dict[str, Any], params: dict[str, str], **kw: Any) -> Case:
    async def call(env: Env, **kwargs: Any) -> Any:
        return await _maybe_await(getattr(env.rt.router, method)(**kwargs))
    return Case(f"rt.router.{method}", call, good, params, **kw)


def ctx_case(method: str, good: dict[str, Any], params: dict[str, str], **kw: Any) -> Case:
    async def call(env: Env, **kwargs: Any) -> Any:
        return await _maybe_await(getattr(env.ctx, method)(**kwargs))
    return Case(f"ctx.{method}", call, good, params, in_turn=True, **kw)


def sdk_case(sdk: str, method: str, good: dict[str, Any], params: dict[str, str], *,
             name: str | None = None, call: Callable[..., Any] | None = None,
             **kw: Any) -> Case:
    """``ctx.<sdk>.<method>(**kwargs)`` in a turn, or ``call(ctx, **kwargs)`` if given."""
    async def run(env: Env, **kwargs: Any) -> Any:
        if call is not None:
            return await call(env.ctx, **kwargs)
        return await getattr(getattr(env.ctx, sdk), method)(**kwargs)
    return Case(name or f"ctx.{sdk}.{method}", run, good, params, in_turn=True, **kw)


SINCE = "a unix time before 1970 is a lower bound like any other (a filter: nothing is written)"
EMPTY_USER_TEXT = "what the user sent may be empty (README: record_user_message)"
EMPTY_CAPTION = "an empty caption or summary is no caption: the text fallback skips it"
EMPTY_MEDIA_TYPE = "an empty media type is no media type (left to the route to guess)"
SEED = "any int seeds a random.Random"
NOT_A_COMMAND = "text that is no slash command is a plain message: parse_command answers None"
SANITIZED = ("shown in the agent's first prompt, sanitized there (a lone surrogate dropped, "
             "an empty id resolved from the channel's name)")
NUMBER_ID = "platform ids may be numbers: str()-ed (README: Inbound)"
EMPTY_OPTIONAL_ID = "an empty optional id counts as missing (documented)"
LIFECYCLE = ("a tool call is only reported to lifecycle hooks, never stored; the terminal "
             "sanitizes it, a gateway frame escapes it (\\ud800)")
ONLY_MODE = "an unknown memory mode resolves to metadata-only, the only mode (logged)"
NO_SENDER = "an id no sender has: it admits no one"
HELD_NAME = ("a name held in memory to match and log, never stored; log lines (key=value "
             "and JSON) and error messages escape it")
PAST = "a unix time already past: the question is answered expired, never shown"
NO_BOUND = "a bound this large never binds: it is an int held in memory, never bound to SQL"
NO_SESSION = "an empty session id is no session (the answer says none)"
SHOWN_AS_STATE = "only whether there is a session is shown (active), never its id"

def channel_case(method: str, good: dict[str, Any], params: dict[str, str],
                 **kw: Any) -> Case:
    """``MemoryChannel(rt).<method>(**kwargs)``: a channel's public methods."""
    async def call(env: Env, **kwargs: Any) -> Any:
        channel = MemoryChannel(env.rt)
        try:
            return await _maybe_await(getattr(channel, method)(**kwargs))
        finally:
            channel.close()  # frees its name for the next call's channel
    return Case(f"MemoryChannel.{method}", call, good, params, **kw)


S = "<session>"
D = "<delivery>"


def resolve(env: Env, value: Any) -> Any:
    if value is S:
        return env.session_id
    if value is D:
        return env.delivery_id
    if value == "<route>":
        return MemoryRoute()
    if value == "<token>":
        return env.token
    if value == "<outbound>":
        return Outbound(session_id=env.session_id, delivery_id="d-x", kind="message",
                        blocks=(TextBlock("x"),), text="x")
    if value == "<conversation>":
        return Conversation(key="memory:chat:c", chat_id="c")
    if value == "<prompt>":
        return Prompt(session_id="nobody", text="sure?", prompt_id="p1")
    if value == "<request>":
        return ApprovalRequest(session_id="nobody", action="rm", request_id="r1")
    if isinstance(value, list):
        return [resolve(env, v) for v in value]
    return value


CASES: list[Case] = [
    rt_case("create_session", {"channel": "web", "session_id": "fresh",
                               "parent_session_id": S, "metadata": {"a": 1}},
            {"channel": "id", "session_id": "id", "parent_session_id": "id",
             "metadata": "map"}),
    rt_case("session", {"session_id": S}, {"session_id": "id"}),
    rt_case("last_seq", {"session_id": S}, {"session_id": "id"}),
    rt_case("last_handed_seq", {"session_id": S}, {"session_id": "id"}),
    rt_case("artifact_root_for", {"session_id": S}, {"session_id": "id"}),
    rt_case("history", {"session_id": S, "model_context": False, "limit": 5},
            {"session_id": "id", "model_context": "bool", "limit": "count", "before": "id"}),
    rt_case("deliveries", {"session_id": S, "status": "queued", "since": 0.0, "limit": 5},
            {"session_id": "id", "status": "id", "since": "seconds", "limit": "count"},
            accepts={"since=negative": SINCE}),
    rt_case("recent_deliveries", {"session_id": S, "status": "queued", "since": 0.0,
                                  "limit": 5},
            {"session_id": "id", "status": "id", "since": "seconds", "limit": "count"},
            accepts={"since=negative": SINCE}),
    rt_case("status_counts", {"session_id": S, "since": 0.0},
            {"session_id": "id", "since": "seconds"}, accepts={"since=negative": SINCE}),
    rt_case("status_report", {"session_id": S, "status": "queued", "since": 0.0, "limit": 5},
            {"session_id": "id", "status": "id", "since": "seconds", "limit": "count"},
            accepts={"since=negative": SINCE}),
    rt_case("delivery_status", {"delivery_id": D}, {"delivery_id": "id"}),
    rt_case("delivery_report", {"delivery_id": D}, {"delivery_id": "id"}),
    rt_case("delivery_events", {"delivery_id": D}, {"delivery_id": "id"}),
    rt_case("events", {"after_seq": 0}, {"after_seq": "count"}),
    rt_case("notify", {"session_id": S, "text": "hi", "kind": "notice", "metadata": {"a": 1},
                       "settles": []},
            {"session_id": "id", "text": "text", "kind": "id", "metadata": "map",
             "settles": "ids"}),
    rt_case("record_user_message", {"session_id": S, "text": "hi"},
            {"session_id": "id", "text": "text", "turn_id": "id"},
            accepts={"text=empty": EMPTY_USER_TEXT}),
    rt_case("record_user_messages", {"session_id": S, "texts": ["hi"]},
            {"session_id": "id", "texts": "ids", "turn_id": "id"},
            accepts={"texts=[empty]": EMPTY_USER_TEXT}),
    rt_case("hold_inbound", {"session_id": S, "notice": "held", "message_id": "m",
                             "channel": "web", "inbound_id": "in1"},
            {"session_id": "id", "notice": "text", "message_id": "id", "channel": "id",
             "inbound_id": "id"}),
    rt_case("release_inbound", {"inbound_ids": ["in1"]}, {"inbound_ids": "ids"}),
    rt_case("confirm", {"delivery_ids": [D]}, {"delivery_ids": "ids"}),
    rt_case("confirm_through", {"session_id": S, "seq": 1},
            {"session_id": "id", "seq": "count"}),
    rt_case("requeue", {"session_id": S, "delivery_ids": [D]},
            {"session_id": "id", "delivery_ids": "ids"}),
    rt_case("abandon_unacked", {"session_id": S, "keep": []},
            {"session_id": "id", "keep": "ids"}),
    rt_case("drop_missed_progress", {"session_id": S, "after_seq": 0},
            {"session_id": "id", "after_seq": "count"}),
    rt_case("stored_deliveries", {"session_id": S, "after_seq": 0, "limit": 5,
                                  "kinds": ["message"], "statuses": ["sent"],
                                  "max_bytes": 1000},
            {"session_id": "id", "after_seq": "count", "limit": "count", "kinds": "ids",
             "statuses": "ids", "max_bytes": "count"}),
    rt_case("session_has_turns", {"session_id": S, "excluding": []},
            {"session_id": "id", "excluding": "ids"}),
    rt_case("unrouted_written", {"session_id": S}, {"session_id": "id"}),
    rt_case("conversation_session", {"channel": "web", "conversation_key": "web:chat:1"},
            {"channel": "id", "conversation_key": "id"}),
    rt_case("resolve_conversation", {"channel": "web", "conversation_key": "web:chat:1"},
            {"channel": "id", "conversation_key": "id"}),
    rt_case("new_conversation_session", {"channel": "web", "conversation_key": "web:chat:1"},
            {"channel": "id", "conversation_key": "id", "also": "ids"}),
    rt_case("resume_conversation", {"channel": "web", "conversation_key": "web:chat:1",
                                    "session_id": S},
            {"channel": "id", "conversation_key": "id", "session_id": "id", "also": "ids"}),
    rt_case("forget_conversation", {"channel": "web", "conversation_key": "web:chat:1"},
            {"channel": "id", "conversation_key": "id", "also": "ids"}),
    rt_case("unrouted_sessions", {"channel": "web", "conversation_key": "web:chat:1"},
            {"channel": "id", "conversation_key": "id"}),
    rt_case("conversation_deliveries", {"channel": "web", "conversation_key": "web:chat:1",
                                        "delivery_ids": [D]},
            {"channel": "id", "conversation_key": "id", "delivery_ids": "ids"}),
    rt_case("client_message_outcome", {"channel": "web", "conversation_key": "web:chat:1",
                                       "client_id": "c1"},
            {"channel": "id", "conversation_key": "id", "client_id": "id"}),
    rt_case("remember_client_message", {"channel": "web", "conversation_key": "web:chat:1",
                                        "client_id": "c1", "session_id": S,
                                        "outcome": "accepted"},
            {"channel": "id", "conversation_key": "id", "client_id": "id",
             "session_id": "id", "outcome": "id"}),
    rt_case("prune", {"older_than": 3600.0}, {"older_than": "seconds", "on_chunk": "callable"}),
    rt_case("open_turn", {"session_id": S, "slot": "output", "mode": "serial",
                          "history_policy": "persist", "message_id": "m", "turn_id": "t9",
                          "inbound_ids": []},
            {"session_id": "id", "slot": "id", "mode": "id", "history_policy": "id",
             "message_id": "id", "turn_id": "id", "inbound_ids": "ids"}),
    rt_case("start_task", {"name": "job", "async_fn": trio.lowlevel.checkpoint},
            {"name": "id", "async_fn": "callable", "on_abandon": "callable"}),
    rt_case("hold_binds", {"route": "<route>"}, {"route": "thing"},
            accepts={f"route={tag}": "a route is matched by identity: one bound to no session "
                                     "holds nothing (nothing is written)"
                     for tag in KINDS["thing"]}),
    router_case("bind", {"session_id": S, "route": "<route>"},
                {"session_id": "id", "route": "thing"}),
    router_case("binding", {"session_id": S}, {"session_id": "id"},
                accepts={f"session_id={tag}": "a read of the in-memory route table: no binding "
                                              "is None (nothing is written)"
                         for tag in KINDS["id"]}),
    router_case("unbind", {"token": "<token>"}, {"token": "thing"}),
    Case("rt.router.bind(MemoryRoute)",
         lambda env, **kw: env.rt.router.bind(env.session_id, MemoryRoute(**kw)),
         {"capabilities": ["text"], "ack_window": 2},
         {"capabilities": "ids", "latency": "seconds", "fail": "thing", "ack_window": "count"},
         accepts={"ack_window=huge": NO_BOUND}),
    router_case("add_bind_listener", {"listener": print}, {"listener": "callable"}),
    router_case("add_unbind_listener", {"listener": print}, {"listener": "callable"}),
    router_case("deliver", {"outbound": "<outbound>"}, {"outbound": "thing"}),
    router_case("prompt_user", {"prompt": "<prompt>"}, {"prompt": "thing"}),
    router_case("request_approval", {"request": "<request>"}, {"request": "thing"}),
    Case("rt.router.prompt_user(Prompt)",
         lambda env, **kw: env.rt.router.prompt_user(Prompt(**kw)),
         {"session_id": "nobody", "text": "sure?", "prompt_id": "p1", "turn_id": "t1",
          "expires_at": 10.0**10},
         {"session_id": "id", "text": "text", "prompt_id": "id", "turn_id": "id",
          "expires_at": "seconds"}, accepts={"expires_at=negative": PAST}),
    Case("rt.router.request_approval(ApprovalRequest)",
         lambda env, **kw: env.rt.router.request_approval(ApprovalRequest(**kw)),
         {"session_id": "nobody", "action": "rm", "request_id": "r1", "details": {"a": 1},
          "turn_id": "t1", "expires_at": 10.0**10},
         {"session_id": "id", "action": "text", "request_id": "id", "details": "map",
          "turn_id": "id", "expires_at": "seconds"}, accepts={"expires_at=negative": PAST}),
    Case("MemoryChannel", lambda env, **kw: MemoryChannel(env.rt, **kw),
         {"agent": EchoAgent(), "name": "memory"},
         {"config": "thing", "agent": "thing", "name": "id"}),
    Case("TerminalChannel", lambda env, **kw: TerminalChannel(env.rt, **kw),
         {"config": ChannelConfig("term"), "agent": EchoAgent(), "out": io.StringIO(),
          "chat_id": "c", "sender_id": "you", "show_chunks": False, "redraw": None},
         {"config": "thing", "agent": "thing", "out": "thing", "chat_id": "id",
          "sender_id": "id", "show_chunks": "bool", "redraw": "callable"},
         accepts={"chat_id=huge": NUMBER_ID, "sender_id=huge": NUMBER_ID}),
    Case("GatewayChannel", lambda env, **kw: GatewayChannel(env.rt, **kw),
         {"settings": GatewayConfig(token="s3cret-token-1234"), "config": ChannelConfig("gw"),
          "agent": EchoAgent()},
         {"settings": "thing", "config": "thing", "agent": "thing"}),
    channel_case("handle_inbound", {"inbound": Inbound("c", "u", "hi")}, {"inbound": "thing"}),
    channel_case("conversation_for", {"inbound": Inbound("c", "u", "hi")},
                 {"inbound": "thing"}),
    channel_case("conversation_of", {"session_id": S}, {"session_id": "id"},
                 accepts={f"session_id={tag}": "a read of the channel's in-memory map: no "
                                               "conversation is None (nothing is written)"
                          for tag in KINDS["id"]}),
    channel_case("answer", {"conversation": "<conversation>", "session_id": S, "text": "ok"},
                 {"conversation": "thing", "session_id": "id", "text": "text",
                  "command": "id"}),
    channel_case("cancel_turn", {"chat_id": "c", "sender_id": "u"},
                 {"chat_id": "id", "sender_id": "id", "thread_id": "id", "press_id": "id"},
                 accepts={"chat_id=huge": NUMBER_ID, "sender_id=huge": NUMBER_ID,
                          "thread_id=huge": NUMBER_ID, "press_id=huge": NUMBER_ID,
                          "thread_id=empty": EMPTY_OPTIONAL_ID,
                          "press_id=empty": EMPTY_OPTIONAL_ID}),
    ctx_case("cancel", {"reason": "user"}, {"reason": "id"}),
    ctx_case("prompt_user", {"text": "sure?", "expires_in": 1.0},
             {"text": "text", "expires_in": "seconds"}),
    ctx_case("request_approval", {"action": "rm", "details": {"a": 1}, "expires_in": 1.0},
             {"action": "id", "details": "map", "expires_in": "seconds"}),
    *(sdk_case(sdk, method, {"text": "hi", "delivery_metadata": {"a": 1},
                             "idempotency_key": "k"},
               {"text": "text", "visible": "bool", "delivery_metadata": "map",
                "idempotency_key": "id"})
      for sdk in ("output", "input") for method in ("notice", "progress")),
    *(sdk_case(sdk, "send_text", {"text": "hi", "history_policy": "persist",
                                  "history_text": "h", "failure_history_text": "f",
                                  "delivery_metadata": {"a": 1},
                                  "idempotency_key": "k"},
               {"text": "text", "write_history": "bool", "history_policy": "id",
                "visible": "bool", "history_text": "text", "failure_history_text": "text",
                "delivery_metadata": "map", "idempotency_key": "id", "settles": "ids"})
      for sdk in ("output", "input")),
    sdk_case("output", "send", {"blocks": [TextBlock("hi")], "kind": "message",
                                "history_text": "h", "delivery_metadata": {"a": 1}},
             {"blocks": "ids", "kind": "id", "write_history": "bool", "history_policy": "id",
              "visible": "bool", "history_text": "text", "failure_history_text": "text",
              "delivery_metadata": "map", "idempotency_key": "id", "settles": "ids"},
             accepts={"blocks=lone-str": "a string is a text block (README: send)"}),
    sdk_case("output", "send", {"text": "hi"}, {"text": "text"}, fields={"text": "blocks"},
             name="ctx.output.send(TextBlock)",
             call=lambda ctx, text: ctx.output.send([TextBlock(text)])),
    sdk_case("output", "send", {"action": "stop", "data": {"a": 1}},
             {"action": "id", "data": "map"}, fields={"action": "blocks"},
             name="ctx.output.send(ControlBlock)",
             call=lambda ctx, action, data: ctx.output.send([ControlBlock(action, data)])),
    sdk_case("output", "send_image", {"url": "https://example.com/a.png", "name": "a.png",
                                      "media_type": "image/png", "summary": "s",
                                      "metadata": {"a": 1}},
             {"url": "id", "name": "id", "media_type": "id", "summary": "text",
              "metadata": "map"},
             fields={p: f"source.{p}" for p in ("url", "name", "media_type", "summary",
                                                "metadata")},
             accepts={"summary=empty": EMPTY_CAPTION, "media_type=empty": EMPTY_MEDIA_TYPE,
                      "name=empty": "an empty name is no name: the file's own is used"},
             name="ctx.output.send_image(ArtifactRef)",
             call=lambda ctx, **kw: ctx.output.send_image(ArtifactRef(**kw), history_text="h")),
    sdk_case("output", "send_image", {"path": "chart.png"}, {"path": "id"},
             fields={"path": "source.path"}, name="ctx.output.send_image(ArtifactRef(path))",
             call=lambda ctx, **kw: ctx.output.send_image(ArtifactRef(**kw), history_text="h")),
    *(sdk_case("output", method, {"source": "chart.png", "caption": "c",
                                  "media_type": "image/png", "summary": "s",
                                  "artifact_metadata": {"a": 1}, "history_text": "h"},
               {"source": "id", "caption": "text", "media_type": "id", "summary": "text",
                "artifact_metadata": "map", "history_policy": "id", "visible": "bool",
                "idempotency_key": "id"},
               accepts={"caption=empty": EMPTY_CAPTION, "summary=empty": EMPTY_CAPTION,
                        "media_type=empty": EMPTY_MEDIA_TYPE})
      for method in ("send_image", "send_audio", "send_video", "send_file")),
]


def count_rows(db_path: pathlib.Path) -> dict[str, int]:
    conn = sqlite3.connect(db_path)
    try:
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        conn.close()


def names(field: str, param: str) -> bool:
    """Whether *field* (a ValidationError's) names *param* (or an item or key of it), or, for
    the options of a config file, is the dotted key ending in it (``gateway.port``)."""
    return (field == param or field.startswith((param + ".", param + "["))
            or field.endswith("." + param))


def judge(problems: list[str], where: str, error: BaseException | None, *, param: str,
          field: str, accepted: bool, lookups: bool = False) -> None:
    """Add to *problems* what is wrong with how a call given one bad argument, *param*
    (refused as *field*), ended: with *error*, or returning (``None``), which only a value
    the case *accepted* may. A ``ValidationError`` must name the field, a ``TypeError`` the
    argument; a ``LookupError`` is right only for an unknown id (*lookups*); anything else
    leaked."""
    if error is None:
        if not accepted:
            problems.append(f"{where}: accepted")
    elif isinstance(error, ValidationError):
        if not names(error.field, field):
            problems.append(f"{where}: ValidationError field={error.field!r}: {error}")
    elif isinstance(error, TypeError):
        if param not in str(error) and field not in str(error):
            problems.append(f"{where}: TypeError not naming it: {error}")
    elif not (lookups and isinstance(error, LookupError)):
        problems.append(f"{where}: {type(error).__module__}.{type(error).__name__}: {error}")


async def sweep_one(case: Case, env: Env, db_path: pathlib.Path, param: str, tag: str,
                    problems: list[str]) -> None:
    kwargs = {k: resolve(env, v) for k, v in case.good.items()}
    kwargs[param] = VALUES[tag]
    where = f"{case.name}({param}={tag})"
    field = case.fields.get(param, param)
    before = count_rows(db_path)
    error: Exception | None = None
    try:
        with trio.fail_after(case.guard):
            await _maybe_await(case.call(env, **kwargs))
    except trio.TooSlowError:
        problems.append(f"{where}: hung")
        return
    except Exception as caught:  # noqa: BLE001 - judged below: the sweep reports what leaked
        error = caught
    judge(problems, where, error, param=param, field=field,
          accepted=f"{param}={tag}" in case.accepts,
          lookups=KINDS.get(case.params[param]) is KINDS["id"])
    if error is not None:
        after = count_rows(db_path)
        if after != before:
            problems.append(f"{where}: wrote rows {before} -> {after}")


async def sweep(case: Case, env: Env, db_path: pathlib.Path, problems: list[str]) -> None:
    for param, kind in case.params.items():
        for tag in KINDS[kind]:
            await sweep_one(case, env, db_path, param, tag, problems)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_runtime_call_refuses_bad_input_by_name(case: Case, rt, db_path,
                                                      workspace) -> None:
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image", "file", "control"})
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("first")
    with trio.fail_after(10):
        assert await handle.wait() == "delivered"
    token = rt.router.bind(session_id, route)
    problems: list[str] = []
    if case.in_turn:
        async with rt.open_turn(session_id) as ctx:
            env = Env(rt, session_id, route, handle.delivery_id, token, ctx)
            await sweep(case, env, db_path, problems)
    else:
        await sweep(case, Env(rt, session_id, route, handle.delivery_id, token), db_path,
                    problems)
    assert not problems, "\n".join(problems)


async def _child(ctx: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async for _ in ctx.mailbox:  # until the supervisor closes it
        pass


def plain_case(name: str, fn: Callable[..., Any], good: dict[str, Any], params: dict[str, str],
               **kw: Any) -> Case:
    def call(env: Any, **kwargs: Any) -> Any:
        return fn(**kwargs)
    return Case(name, call, good, params, **kw)


PLAIN_CASES: list[Case] = [
    plain_case("ChannelConfig", ChannelConfig,
               {"name": "web", "instructions": "be brief", "turn_timeout": 10.0},
               {"name": "id", "instructions": "text", "identity": "thing",
                "memory_scope": "thing", "dispatch_mode": "id", "session_scope": "id",
                "turn_timeout": "seconds", "access": "thing", "agent": "thing",
                "dedupe_message_ids": "bool"},
               accepts={"instructions=empty": "empty instructions are none"}),
    plain_case("GatewayConfig", GatewayConfig, {"token": "s3cret-token-1234"},
               {"token": "id", "host": "id", "port": "count", "ack_window": "count",
                "heartbeat_s": "seconds", "max_frame_bytes": "count", "max_backlog": "count",
                "max_backlog_bytes": "count", "rate": "seconds", "burst": "count",
                "hello_timeout": "seconds", "prompt_timeout": "seconds",
                "replay_page": "count"},
               accepts={f"{p}=huge": NO_BOUND for p in ("ack_window", "burst", "max_backlog",
                                                      "max_backlog_bytes", "max_frame_bytes")}),
    plain_case("ChildSpec", ChildSpec, {"name": "child", "fn": _child},
               {"name": "id", "fn": "callable", "restart": "id", "shutdown_timeout": "seconds",
                "start_timeout": "seconds", "mailbox_size": "count", "backoff": "thing",
                "dead_letter": "callable", "on_exit": "callable"},
               accepts={"mailbox_size=huge": NO_BOUND, "name=surrogate": HELD_NAME}),
    plain_case("Backoff", Backoff, {},
               {"min": "seconds", "max": "seconds", "jitter": "seconds",
                "reset_after": "seconds", "seed": "count"},
               accepts={"seed=huge": SEED, "seed=negative": SEED}),
    plain_case("Intensity", Intensity, {}, {"max_restarts": "count", "period": "seconds"},
               accepts={"max_restarts=huge": NO_BOUND}),
    plain_case("FaultRule", FaultRule, {"seam": "child_start"},
               {"seam": "id", "child": "id", "action": "id", "nth": "count",
                "every": "count", "probability": "seconds", "times": "count"},
               accepts={"nth=huge": NO_BOUND, "every=huge": NO_BOUND, "times=huge": NO_BOUND,
                        "child=surrogate": HELD_NAME}),
    plain_case("FaultPlan", FaultPlan, {}, {"rules": "ids", "seed": "count"},
               accepts={"seed=huge": SEED, "seed=negative": SEED}),
    plain_case("MemoryRoute", MemoryRoute, {},
               {"capabilities": "ids", "latency": "seconds", "fail": "thing",
                "ack_window": "count"},
               accepts={"ack_window=huge": NO_BOUND}),
    plain_case("Inbound", Inbound, {"chat_id": "c", "sender_id": "u", "text": "hi"},
               {"chat_id": "id", "sender_id": "id", "text": "text", "message_id": "id",
                "thread_id": "id"},
               accepts={"chat_id=huge": NUMBER_ID, "sender_id=huge": NUMBER_ID,
                        "message_id=huge": NUMBER_ID, "thread_id=huge": NUMBER_ID,
                        "message_id=empty": EMPTY_OPTIONAL_ID, "thread_id=empty": EMPTY_OPTIONAL_ID,
                        "text=empty": "a user may send an empty message"}),
    plain_case("ToolCall", ToolCall, {"name": "grep", "arguments": {"a": 1}},
               {"name": "id", "arguments": "map", "call_id": "id"},
               accepts={"name=surrogate": LIFECYCLE, "call_id=surrogate": LIFECYCLE,
                        "call_id=empty": LIFECYCLE}),
    plain_case("ChannelIdentity", ChannelIdentity, {"id": "bot"},
               {"id": "id", "display_name": "id", "description": "text"},
               accepts={f"{p}={t}": SANITIZED for p in ("id", "display_name", "description")
                        for t in ("empty", "surrogate")}),
    plain_case("MemoryScope", MemoryScope, {"namespace": "n"},
               {"namespace": "id", "mode": "id"},
               accepts={"namespace=empty": SANITIZED, "namespace=surrogate": SANITIZED,
                        "mode=empty": ONLY_MODE, "mode=surrogate": ONLY_MODE}),
    plain_case("AccessPolicy", AccessPolicy, {"allowlist": frozenset({"u"})},
               {"allowlist": "ids"},
               accepts={"allowlist=[empty]": NO_SENDER, "allowlist=[surrogate]": NO_SENDER}),
    plain_case("EchoAgent", EchoAgent, {}, {"chunk_size": "count"},
               accepts={"chunk_size=huge": NO_BOUND}),
    plain_case("CommandAgent", CommandAgent, {"argv": ["cat"]},
               {"argv": "ids", "env": "map", "cwd": "id", "timeout": "seconds"}),
    plain_case("conversation_key",
               lambda channel, scope, thread=None: conversation_key(channel, scope, "1",
                                                                    thread=thread),
               {"channel": "web", "scope": "chat"},
               {"channel": "id", "scope": "id", "thread": "id"},
               accepts={"thread=empty": EMPTY_OPTIONAL_ID, "thread=huge": NUMBER_ID}),
    plain_case("parse_conversation_key", parse_conversation_key, {"key": "web:chat:1"},
               {"key": "id"}),
    plain_case("workspace_name", workspace_name, {"workspace": "/tmp/ws"},
               {"workspace": "id"},
               accepts={"workspace=bytes": "documented: a str, bytes or os.PathLike",
                        "workspace=empty": "the current directory's name",
                        "workspace=surrogate": "a name to show, sanitized"}),
    plain_case("load_agent", load_agent, {"path": "tidings.channels:EchoAgent"},
               {"path": "id"}, fields={"path": "agent"}),  # field=: the name it reports
    plain_case("supervisor_child", supervisor_child, {"children": [], "name": "sup"},
               {"children": "ids", "strategy": "id", "intensity": "thing", "name": "id",
                "fault_plan": "thing"},
               accepts={"name=surrogate": HELD_NAME}),
    plain_case("random_fault_plan", random_fault_plan, {"seed": 1, "rate": 0.1},
               {"seed": "count", "rate": "seconds", "children": "ids", "actions": "ids"},
               accepts={"seed=huge": SEED, "seed=negative": SEED,
                        "children=[surrogate]": HELD_NAME}),
    plain_case("CheckpointInjector", CheckpointInjector,
               {"supervisor": lambda: None, "child": "writer"},
               {"supervisor": "callable", "child": "id", "at": "count", "every": "count",
                "times": "count", "ledger": "thing"},
               accepts={"at=huge": NO_BOUND, "every=huge": NO_BOUND, "times=huge": NO_BOUND,
                        "child=surrogate": HELD_NAME}),
    plain_case("parse_command", parse_command, {"text": "/new"}, {"text": "text"},
               accepts={"text=empty": NOT_A_COMMAND, "text=surrogate": NOT_A_COMMAND}),
    plain_case("compose_first_prompt", compose_first_prompt,
               {"config": ChannelConfig("web", instructions="be brief"), "user_text": "hi",
                "first_in_session": True, "steered": False},
               {"config": "thing", "user_text": "text", "first_in_session": "bool",
                "steered": "bool"},
               accepts={"user_text=empty": EMPTY_USER_TEXT}),
    plain_case("who_text", who_text,
               {"config": ChannelConfig("web"), "session_id": "s1", "workspace": "/tmp/ws"},
               {"config": "thing", "session_id": "id", "workspace": "id"},
               accepts={"session_id=empty": NO_SESSION, "session_id=surrogate": SHOWN_AS_STATE,
                        "workspace=bytes": "documented: a str, bytes or os.PathLike",
                        "workspace=empty": "the current directory's name",
                        "workspace=surrogate": "a name to show, sanitized"}),
    plain_case("status_text", status_text,
               {"config": ChannelConfig("web"), "session_id": "s1", "turn_running": True},
               {"config": "thing", "session_id": "id", "turn_running": "bool"},
               accepts={"session_id=empty": NO_SESSION,
                        "session_id=surrogate": "shown sanitized (a lone surrogate dropped)"}),
    plain_case("boundary_note", boundary_note,
               {"identity": ChannelConfig("web").resolved_identity(),
                "memory_scope": ChannelConfig("web").resolved_memory_scope()},
               {"identity": "thing", "memory_scope": "thing"}),
    plain_case("inbound_conversation_key", inbound_conversation_key,
               {"config": ChannelConfig("web"), "inbound": Inbound("c", "u", "hi")},
               {"config": "thing", "inbound": "thing"}),
]


def sweep_plain(case: Case, param: str, tag: str, problems: list[str]) -> None:
    kwargs = dict(case.good)
    kwargs[param] = VALUES[tag]
    where = f"{case.name}({param}={tag})"
    field = case.fields.get(param, param)
    error: Exception | None = None
    try:
        case.call(None, **kwargs)
    except Exception as caught:  # noqa: BLE001 - judged below: the sweep reports what leaked
        error = caught
    judge(problems, where, error, param=param, field=field,
          accepted=f"{param}={tag}" in case.accepts)


@pytest.mark.parametrize("case", PLAIN_CASES, ids=lambda c: c.name)
def test_constructor_refuses_bad_input_by_name(case: Case) -> None:
    problems: list[str] = []
    for param, kind in case.params.items():
        for tag in KINDS[kind]:
            sweep_plain(case, param, tag, problems)
    assert not problems, "\n".join(problems)


@attrs.frozen
class Opener:
    """An ``async with`` opener of a database or a supervisor: ``open(db_path, workspace,
    **kwargs)``; a refused option must leave no database file behind."""

    name: str
    open: Callable[..., Any]
    good: dict[str, Any]
    params: dict[str, str]
    accepts: dict[str, str] = attrs.field(factory=dict)


def _open_runtime(db: pathlib.Path, ws: pathlib.Path, db_path: Any = None, **kw: Any) -> Any:
    return tidings.open_runtime(db if db_path is None else db_path, **{"workspace": ws, **kw})


def _open_store(db: pathlib.Path, ws: pathlib.Path, path: Any = None, **kw: Any) -> Any:
    return open_store(db if path is None else path, **kw)


OPENERS: list[Opener] = [
    Opener("open_runtime", _open_runtime,
           {"core_id": "core", "grace": 1.0, "lease": 60.0, "scan_interval": 30.0,
            "stranded_after": 60.0, "recover": "at_open", "synchronous": "NORMAL",
            "writer": "thread"},
           {"db_path": "id", "workspace": "id", "core_id": "id", "artifact_root": "id",
            "recover": "id",
            "synchronous": "id", "fault_plan": "thing", "intensity": "thing",
            "grace": "seconds", "lease": "seconds", "clock": "callable",
            "scan_interval": "seconds", "stranded_after": "seconds", "writer": "id",
            "private_files": "ids"}),
    Opener("open_store", _open_store,
           {"synchronous": "NORMAL", "readers": 2, "max_batch": 64, "mailbox_size": 16},
           {"path": "id", "synchronous": "id", "readers": "count", "max_batch": "count",
            "mailbox_size": "count", "writer": "id", "clock": "callable"},
           accepts={"readers=huge": NO_BOUND, "max_batch=huge": NO_BOUND,
                    "mailbox_size=huge": NO_BOUND}),
    Opener("open_supervisor", lambda db, ws, **kw: open_supervisor(**kw),
           {"children": [], "strategy": "one_for_one", "name": "sup"},
           {"children": "ids", "strategy": "id", "intensity": "thing", "name": "id",
            "fault_plan": "thing", "restart_log_size": "count"},
           accepts={"name=surrogate": HELD_NAME, "restart_log_size=huge": NO_BOUND}),
]


@pytest.mark.parametrize("opener", OPENERS, ids=lambda o: o.name)
async def test_opener_refuses_bad_input_before_creating_anything(
        opener: Opener, db_path: pathlib.Path, workspace: pathlib.Path) -> None:
    problems: list[str] = []
    for param, kind in opener.params.items():
        for tag in KINDS[kind]:
            kwargs = {**opener.good, param: VALUES[tag]}
            where = f"{opener.name}({param}={tag})"
            state = db_path.parent / f"{param}-{tag}"  # a directory of its own, not made yet
            error: Exception | None = None
            try:
                with trio.fail_after(10):
                    async with opener.open(state / db_path.name, workspace, **kwargs):
                        pass
            except trio.TooSlowError:
                problems.append(f"{where}: hung")
                continue
            except Exception as caught:  # noqa: BLE001 - judged below
                error = caught
            judge(problems, where, error, param=param, field=param,
                  accepted=f"{param}={tag}" in opener.accepts)
            if error is not None and state.exists():
                problems.append(f"{where}: left {sorted(p.name for p in state.iterdir())}")
    assert not problems, "\n".join(problems)


def sup_case(method: str, good: dict[str, Any], params: dict[str, str], **kw: Any) -> Case:
    async def call(sup: Any, **kwargs: Any) -> Any:
        return await _maybe_await(getattr(sup, method)(**kwargs))
    return Case(f"supervisor.{method}", call, good, params, **kw)


SUPERVISOR_CASES: list[Case] = [
    sup_case("start_child", {"spec": ChildSpec("extra", _child)}, {"spec": "thing"}),
    sup_case("start_child_soon", {"spec": ChildSpec("extra", _child)}, {"spec": "thing"}),
    sup_case("stop_child", {"name": "idle"}, {"name": "id"}),
    sup_case("mailbox", {"name": "idle"}, {"name": "id"}),
    sup_case("child_task", {"name": "idle"}, {"name": "id"}),
]


@pytest.mark.parametrize("case", SUPERVISOR_CASES, ids=lambda c: c.name)
async def test_supervisor_method_refuses_bad_input_by_name(case: Case) -> None:
    problems: list[str] = []
    async with open_supervisor([ChildSpec("idle", _child)], name="sup") as sup:
        for param, kind in case.params.items():
            for tag in KINDS[kind]:
                kwargs = {**case.good, param: VALUES[tag]}
                where = f"{case.name}({param}={tag})"
                error: Exception | None = None
                try:
                    with trio.fail_after(case.guard):
                        await case.call(sup, **kwargs)
                except trio.TooSlowError:
                    problems.append(f"{where}: hung")
                    continue
                except Exception as caught:  # noqa: BLE001 - judged below
                    error = caught
                # An unknown child name is an unknown id: ChildNotFoundError, a LookupError.
                judge(problems, where, error, param=param, field=param,
                      accepted=f"{param}={tag}" in case.accepts, lookups=kind == "id")
    assert not problems, "\n".join(problems)


def _count_sessions(conn: sqlite3.Connection) -> int:
    return conn.execute("SELECT count(*) FROM sessions").fetchone()[0]


def test_database_file_functions_refuse_bad_input_by_name(db_path: pathlib.Path) -> None:
    """``prune_file`` and ``read_database`` (the command line's, on a database no runtime
    holds): a bad argument is refused by name and the file is left as it was."""
    fresh_database(db_path)
    cases = [
        plain_case("prune_file", prune_file, {"db": db_path, "cutoff": 0.0, "dry_run": True},
                   {"db": "id", "cutoff": "seconds", "dry_run": "bool"},
                   accepts={"cutoff=negative": "a unix time before 1970: nothing is older"}),
        plain_case("read_database", read_database, {"path": db_path, "fn": _count_sessions},
                   {"path": "id", "fn": "callable"}),
    ]
    before = count_rows(db_path)
    problems: list[str] = []
    for case in cases:
        for param, kind in case.params.items():
            for tag in KINDS[kind]:
                sweep_plain(case, param, tag, problems)
    assert not problems, "\n".join(problems)
    assert count_rows(db_path) == before
