"""A server that welcomes and then sends a frame the client relies on with a field missing or
of the wrong type (not a tidings gateway, or a broken one) is a protocol error: the client
closes it as code ``1002`` naming the field, and ``tidings chat`` ends with that one line
(exit 1), never a ``KeyError`` traceback, nor five reconnects to the same broken server."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from trio_websocket import WebSocketRequest, serve_websocket

from tidings.channels import GatewayClient, GatewayClosed
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

WELCOME = {"type": "welcome", "protocol": 1, "conversation": "bad", "session_id": "s1",
           "last_seq": 0, "heartbeat_s": 20, "max_frame_bytes": 65536, "ack_window": 32,
           "replay": False}

BAD = [
    ({"type": "delivery", "seq": 1, "delivery_id": "d1", "text": "hi"},
     "delivery.session_id is None"),
    ({"type": "delivery", "session_id": "s1", "seq": "1", "delivery_id": "d1", "text": "hi"},
     "delivery.seq is '1'"),
    ({"type": "delivery", "session_id": "s1", "seq": 1, "text": "hi"},
     "delivery.delivery_id is None"),
    ({"type": "accepted", "outcome": "started"}, "accepted.id is None"),
    ({"type": "synced", "session_id": "s1", "last_seq": None}, "synced.last_seq is None"),
    ({"type": "prompt", "text": "name?"}, "prompt.prompt_id is None"),
    ({"type": "approval_request", "request_id": 7, "action": "deploy"},
     "approval_request.request_id is 7"),
    # an id no dict takes: the chat's look-up of its open question raised TypeError
    ({"type": "prompt_closed", "id": ["p1"], "reason": "answered"},
     "prompt_closed.id is ['p1']"),
]


def _server(frame: dict[str, Any]) -> Any:
    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept()
        await ws.get_message()  # the hello
        await ws.send_message(json.dumps(WELCOME))
        await ws.send_message(json.dumps(frame))
        await trio.sleep_forever()
    return handler


@pytest.mark.parametrize(("frame", "why"), BAD, ids=[why for _, why in BAD])
async def test_gateway_client_closes_a_frame_it_cannot_use_as_1002(
        frame: dict[str, Any], why: str) -> None:
    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, _server(frame), "127.0.0.1", 0, None)
        with trio.fail_after(10), pytest.raises(GatewayClosed) as caught:
            async with GatewayClient.connect(f"ws://127.0.0.1:{server.port}",
                                             token="gateway-test-token",
                                             conversation="bad") as client:
                await client.receive()
        nursery.cancel_scope.cancel()
    assert caught.value.code == 1002
    assert caught.value.reason == f"not a tidings gateway: {why}"


@pytest.mark.parametrize(("frame", "why"), BAD, ids=[why for _, why in BAD])
async def test_tidings_chat_ends_with_one_line_on_a_frame_it_cannot_use(
        frame: dict[str, Any], why: str, autojump_clock) -> None:
    err = io.StringIO()

    async def lines() -> AsyncIterator[str]:
        await trio.sleep_forever()
        yield ""

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, _server(frame), "127.0.0.1", 0, None)
        options = ChatOptions(url=f"ws://127.0.0.1:{server.port}", token="gateway-test-token",
                              conversation="bad", interactive=True)
        with trio.fail_after(600):
            code = await chat_over_websocket(options, lines(), out=io.StringIO(), err=err)
        nursery.cancel_scope.cancel()
    assert code == 1
    assert err.getvalue().splitlines()[1:] == [
        f"tidings chat: connection closed (1002): not a tidings gateway: {why}"]


async def test_a_close_reason_reaches_the_terminal_as_one_safe_line(autojump_clock) -> None:
    """The reason of a close is the server's text: control characters (a terminal escape, a
    line break) are not printed as they are."""
    async def close_with_escapes(request: WebSocketRequest) -> None:
        ws = await request.accept()
        await ws.get_message()
        await ws.aclose(4001, "unauthorized:\x1b[2J\nforged line")

    err = io.StringIO()

    async def lines() -> AsyncIterator[str]:
        yield "hello\n"

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, close_with_escapes, "127.0.0.1", 0, None)
        options = ChatOptions(url=f"ws://127.0.0.1:{server.port}", token="gateway-test-token",
                              conversation="bad", interactive=False)
        with trio.fail_after(600):
            code = await chat_over_websocket(options, lines(), out=io.StringIO(), err=err)
        nursery.cancel_scope.cancel()
    assert code == 1
    assert err.getvalue() == ("tidings chat: connection closed (4001): unauthorized:[2J forged "
                              "line\n")


async def test_lifecycle_frames_of_odd_shapes_are_printed_as_safe_lines(autojump_clock) -> None:
    """The printer takes what a frame holds as the server's text: a cancel reason with a
    terminal escape, a tool_call that is no object, a delivery kind or a lifecycle session_id
    of another type, are printed as one safe line each or ignored (before: the escape raw,
    and an AttributeError or TypeError traceback)."""
    frames = [
        {"type": "lifecycle", "event": "cancelled", "reason": "user\x1b[2J\nforged"},
        {"type": "lifecycle", "event": "tool_call", "tool_call": "search"},
        {"type": "lifecycle", "event": "tool_call", "tool_call": {"name": "grep",
                                                                  "arguments": {"q": "x"}}},
        {"type": "lifecycle", "event": "started", "session_id": ["s1"]},
        {"type": "delivery", "session_id": "s1", "seq": 1, "delivery_id": "d1",
         "kind": ["notice"], "text": "hi"},
    ]

    async def odd_then_refuse(request: WebSocketRequest) -> None:
        ws = await request.accept()
        await ws.get_message()
        await ws.send_message(json.dumps(WELCOME))
        for frame in frames:
            await ws.send_message(json.dumps(frame))
        await ws.aclose(4001, "unauthorized: that is all")

    out, err = io.StringIO(), io.StringIO()

    async def lines() -> AsyncIterator[str]:
        await trio.sleep_forever()
        yield ""

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, odd_then_refuse, "127.0.0.1", 0, None)
        options = ChatOptions(url=f"ws://127.0.0.1:{server.port}", token="gateway-test-token",
                              conversation="bad", interactive=True)
        with trio.fail_after(600):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
        nursery.cancel_scope.cancel()
    assert code == 1, err.getvalue()
    assert out.getvalue().splitlines() == [
        "(cancelled: user[2J forged)", '(tool search null)', '(tool grep {"q": "x"})', "hi"]
