"""``GatewayClient`` against a peer that does not speak the protocol: a URL that is some other
websocket server must give the documented :class:`GatewayClosed`, never a JSON or key error."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
from trio_websocket import WebSocketRequest, serve_websocket

from tidings.channels import GatewayClient, GatewayClosed

WELCOME = ('{"type": "welcome", "protocol": 1, "conversation": "c", "session_id": "s1", '
           '"last_seq": 0}')


@asynccontextmanager
async def _other_server(*frames: str | bytes) -> AsyncIterator[str]:
    """A websocket server that answers the first message with *frames*, then waits."""
    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept()
        await ws.get_message()
        for frame in frames:
            await ws.send_message(frame)
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, handler, "127.0.0.1", 0, None)
        yield f"ws://127.0.0.1:{server.port}"
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("first", [
    "hello there",  # not JSON
    b"\xff\xfe",  # binary, not UTF-8
    "[1, 2]",  # not an object
    "[" * 100_000,  # nested beyond the parser
    '{"type": "greeting"}',
    '{"type": "welcome"}',  # no session_id
    '{"type": "welcome", "session_id": "s1", "last_seq": "3"}',
])
async def test_an_answer_that_is_no_welcome_is_gateway_closed_1002(first: str | bytes) -> None:
    async with _other_server(first) as url:
        with trio.fail_after(10), pytest.raises(GatewayClosed) as closed:
            async with GatewayClient.connect(url, token="t" * 10, conversation="c"):
                pass
    assert closed.value.code == 1002


async def test_a_frame_that_is_no_json_object_after_welcome_is_gateway_closed_1002() -> None:
    async with _other_server(WELCOME, "{nope") as url, \
            GatewayClient.connect(url, token="t" * 10, conversation="c") as client:
        assert client.session_id == "s1"
        with trio.fail_after(10), pytest.raises(GatewayClosed) as closed:
            await client.receive()
    assert closed.value.code == 1002


@pytest.mark.parametrize("raised", [
    ValueError("alone"),
    ExceptionGroup("one", [ValueError("in a group")]),
    ExceptionGroup("two", [ValueError("a"), KeyError("b")]),
])
async def test_what_the_body_raises_comes_out_as_it_was_raised(raised: Exception) -> None:
    # The transport's nursery wraps the body's exception in its own group, to be taken off:
    # the body's own group too was taken apart (one exception: that one alone, not the group
    # an `except ExceptionGroup` waits for) or left inside the nursery's (two).
    async with _other_server(WELCOME) as url:
        with pytest.raises(type(raised)) as caught:
            async with GatewayClient.connect(url, token="t" * 8, conversation="c"):
                raise raised
    if isinstance(raised, ExceptionGroup):  # (trio's cancel scope passes on a copy of a group)
        assert type(caught.value) is ExceptionGroup
        assert (caught.value.message, caught.value.exceptions) == (raised.message,
                                                                  raised.exceptions)
    else:
        assert caught.value is raised
