"""Hostile websocket frames: random JSON, wrong types, huge strings, invalid UTF-8, deep
nesting. Each gets an error frame (or a clean close), the gateway stays up for the next
client, and a refused frame writes nothing (the database is checked after every example)."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import attrs
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from trio_websocket import ConnectionClosed

from tidings.channels import GatewayChannel, GatewayClient, GatewayClosed, GatewayConfig
from tidings.channels._gateway_client import open_transport
from tidings.channels._gateway_frames import ERROR_CODES
from tidings.testing import RuntimeThread, database_violations

TOKEN = "hostile-frames-token"
MAX_FRAME = 65536
TYPES = ["hello", "message", "ack", "answer", "approval", "ping", "pong", "sync"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4)
    | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12)

wrong_types = st.builds(
    lambda kind, fields: {"type": kind, **fields},
    st.sampled_from(TYPES) | st.text(max_size=12) | st.integers() | st.none(),
    st.dictionaries(st.sampled_from(["text", "id", "delivery_ids", "up_to_seq", "session_id",
                                     "prompt_id", "request_id", "decision", "token",
                                     "conversation", "protocol", "after_seq"]),
                    json_values, max_size=4))

huge_strings = st.builds(
    lambda n, kind: json.dumps({"type": kind, "text": "x" * n, "id": "huge"}),
    st.integers(MAX_FRAME - 64, MAX_FRAME + 2048), st.sampled_from(["message", "answer"]))

NESTS = [("[", "", "]"), ('{"a": ', "0", "}")]
deep_nesting = st.builds(
    lambda depth, nest, wrapped: (
        '{"type": "message", "id": "deep", "text": ' if wrapped else "")
    + nest[0] * depth + nest[1] + nest[2] * depth + ("}" if wrapped else ""),
    # hypothesis runs examples with the recursion limit raised to about 2000: go past it
    st.integers(100, 900) | st.integers(2500, 30000), st.sampled_from(NESTS), st.booleans())

invalid_utf8 = st.builds(lambda head, tail: head + tail,
                         st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80"]),
                         st.binary(max_size=64))

lone_surrogates = st.builds(
    lambda code: f'{{"type": "message", "text": "\\u{code:04x}", "id": "s"}}',
    st.integers(0xD800, 0xDFFF))

hostile_frames = st.one_of(
    json_values.map(json.dumps), wrong_types.map(json.dumps), huge_strings, deep_nesting,
    invalid_utf8, lone_surrogates, st.text(max_size=40), st.binary(max_size=40))


def counts(db_path, session_id: str) -> tuple[int, ...]:
    """What the session has written: outbox rows, history, turns, artifacts."""
    conn = sqlite3.connect(db_path)
    try:
        return tuple(conn.execute(f"SELECT count(*) FROM {table} WHERE session_id = ?",
                                  (session_id,)).fetchone()[0]
                     for table in ("outbox", "messages", "turns", "artifacts"))
    finally:
        conn.close()


@attrs.define
class Outcome:
    frames: list[dict[str, Any]]
    closed: int | None
    before: tuple[int, ...]
    after: tuple[int, ...]


async def send_one(db_path, url: str, conversation: str, raw: str | bytes) -> Outcome:
    """Send *raw* after a hello, then a sync; the frames up to ``synced`` (or up to a close,
    with its code), and what the conversation's session had written before and after."""
    frames: list[dict[str, Any]] = []
    closed = None
    async with GatewayClient.connect(url, token=TOKEN, conversation=conversation) as client:
        before = counts(db_path, client.session_id)
        try:
            await client.ws.send_message(raw)
            await client.sync()
            while (frame := await client.receive()).get("type") != "synced":
                frames.append(frame)
        except GatewayClosed as exc:
            closed = exc.code
        return Outcome(frames, closed, before, counts(db_path, client.session_id))


async def still_serving(url: str) -> bool:
    async with GatewayClient.connect(url, token=TOKEN, conversation="canary") as client:
        await client.sync()
        while (await client.receive()).get("type") != "synced":
            pass
    return True


def test_hostile_frames_get_an_error_and_write_nothing(db_path, workspace) -> None:
    config = GatewayConfig(token=TOKEN, port=0, max_frame_bytes=MAX_FRAME, rate=1000,
                           burst=1000)
    with RuntimeThread(db_path, workspace) as thread:
        gateway = GatewayChannel(thread.rt, config)
        port = thread.enter(gateway.serving())
        url = f"ws://127.0.0.1:{port}"
        seen: dict[str, int] = {"n": 0}

        @settings(max_examples=120, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(raw=hostile_frames)
        @example(raw="[" * 30000 + "]" * 30000)
        @example(raw='{"type": "message", "id": "d", "text": ' + "[" * 30000 + "]" * 30000 + "}")
        @example(raw=b"\xff\xfe")
        @example(raw=json.dumps({"type": "message", "id": "big", "text": "x" * MAX_FRAME}))
        def check(raw: str | bytes) -> None:
            seen["n"] += 1

            outcome = thread.run(send_one, db_path, url, f"hostile-{seen['n']}", raw)
            errors = [frame for frame in outcome.frames if frame.get("type") == "error"]
            if outcome.closed is not None:
                seen[f"closed {outcome.closed}"] = seen.get(f"closed {outcome.closed}", 0) + 1
                # an application close code, or 1009 (over the websocket's size limit): never
                # 1011 (an internal error) or a dropped connection
                assert outcome.closed >= 4000 or outcome.closed == 1009, outcome
            elif errors:
                seen["error"] = seen.get("error", 0) + 1
                for error in errors:
                    assert error.get("code") in ERROR_CODES, error
                    assert error["code"] != "internal", error  # a clear error, not a failure
                    assert error.get("message"), error
                assert outcome.after == outcome.before, outcome  # refused: nothing written
            else:
                seen["accepted"] = seen.get("accepted", 0) + 1
            assert thread.run(still_serving, url)
            assert database_violations(db_path, allow_open=True, check_turns=False) == []

        check()
        assert seen.get("error", 0) > seen["n"] // 2, seen


def test_a_deeply_nested_frame_is_a_frame_error_under_the_normal_recursion_limit(
        db_path, workspace) -> None:
    """(Outside hypothesis, which raises the recursion limit while it runs examples.)"""
    config = GatewayConfig(token=TOKEN, port=0)
    with RuntimeThread(db_path, workspace) as thread:
        port = thread.enter(GatewayChannel(thread.rt, config).serving())
        url = f"ws://127.0.0.1:{port}"
        for raw in ("[" * 1500 + "]" * 1500,
                    '{"type": "message", "id": "d", "text": ' + "[" * 1500 + "]" * 1500 + "}"):
            outcome = thread.run(send_one, db_path, url, "deep", raw)
            assert outcome.closed is None, outcome
            assert [frame.get("code") for frame in outcome.frames] == ["bad_json"]
            assert outcome.after == outcome.before
        assert thread.run(still_serving, url)


async def first_frame(url: str, raw: str | bytes) -> int | None:
    """Send *raw* as a connection's first frame (instead of a hello); the close code."""
    async with open_transport(url) as ws:
        try:
            await ws.send_message(raw)
            while True:
                await ws.get_message()
        except ConnectionClosed as exc:
            return getattr(exc.reason, "code", None)


def test_a_hostile_first_frame_is_refused_without_an_internal_error(db_path,
                                                                    workspace) -> None:
    config = GatewayConfig(token=TOKEN, port=0, max_frame_bytes=MAX_FRAME)
    with RuntimeThread(db_path, workspace) as thread:
        port = thread.enter(GatewayChannel(thread.rt, config).serving())
        url = f"ws://127.0.0.1:{port}"

        @settings(max_examples=40, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
        @given(raw=hostile_frames)
        @example(raw="[" * 30000 + "]" * 30000)
        @example(raw='{"type": "hello", "token": ' + "[" * 30000 + "]" * 30000 + "}")
        def check(raw: str | bytes) -> None:
            code = thread.run(first_frame, url, raw)
            assert code is not None
            assert code >= 4000 or code == 1009, code
            assert thread.run(still_serving, url)

        check()


def test_a_message_that_is_not_unicode_is_a_field_error(db_path, workspace) -> None:
    with RuntimeThread(db_path, workspace) as thread:
        port = thread.enter(GatewayChannel(thread.rt, GatewayConfig(token=TOKEN,
                                                                    port=0)).serving())
        outcome = thread.run(send_one, db_path, f"ws://127.0.0.1:{port}", "s",
                             '{"type": "message", "text": "a\\ud800", "id": "m1"}')
    [error] = outcome.frames
    assert (error["code"], error["field"], error["ref"]) == ("bad_field", "text", "m1")
    assert outcome.after == outcome.before
