"""``tidings chat --url`` reconnecting to a server that takes the connection and never welcomes
it (a hung gateway, another service now on its port): each attempt says on stderr what it
waits for, and the chat gives up once ``_RECONNECT_FOR`` seconds have passed since the drop
without a welcome, not after five attempts of a full welcome bound each (about 2.8 minutes
before, with no word after the first line)."""

from __future__ import annotations

import functools
import io
from collections.abc import AsyncIterator

import pytest
import trio
from trio_websocket import WebSocketRequest, serve_websocket, wrap_server_stream

from tidings.channels._gateway_client import WELCOME_TIMEOUT
from tidings.channels._gateway_frames import encode
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket


class WelcomesOnceThenHangs:
    """Welcomes the first connection and closes it ``4009``; every later one is taken and never
    answered (``tcp``: not even the websocket handshake)."""

    def __init__(self, hang: str) -> None:
        self.hang = hang
        self.connections = 0
        self.dropped_at: float | None = None

    async def handler(self, request: WebSocketRequest) -> None:
        self.connections += 1
        ws = await request.accept()
        hello = await ws.get_message()
        assert '"hello"' in hello
        if self.connections > 1:
            await trio.sleep_forever()
        await ws.send_message(encode({"type": "welcome", "protocol": 1, "session_id": "s1",
                                      "last_seq": 0, "conversation": "hung"}))
        self.dropped_at = trio.current_time()
        await ws.aclose(4009, "too slow")


async def _serve(server: WelcomesOnceThenHangs, nursery: trio.Nursery) -> str:
    if server.hang == "websocket":
        ws_server = await nursery.start(serve_websocket, server.handler, "127.0.0.1", 0, None)
        return f"ws://127.0.0.1:{ws_server.port}"

    async def route(stream: trio.SocketStream) -> None:
        # tcp: the first connection is a websocket one; later ones take TCP and say nothing.
        if server.connections > 0:
            await trio.sleep_forever()
        async with trio.open_nursery() as inner:
            await server.handler(await wrap_server_stream(inner, stream))

    [listener] = await nursery.start(functools.partial(trio.serve_tcp, route, 0,
                                                         host="127.0.0.1"))
    return f"ws://127.0.0.1:{listener.socket.getsockname()[1]}"


@pytest.mark.parametrize("hang", [
    "websocket",
    "tcp",  # (its cancelled handshakes' sockets are closed: no ResourceWarning to ignore)
])
async def test_reconnecting_to_a_hung_server_gives_up_within_the_bound_and_says_so(
        hang, autojump_clock) -> None:
    server = WelcomesOnceThenHangs(hang)
    err = io.StringIO()

    async def never_ends() -> AsyncIterator[str]:
        await trio.sleep_forever()
        yield ""

    async with trio.open_nursery() as nursery:
        url = await _serve(server, nursery)
        options = ChatOptions(url=url, token="t", conversation="hung", interactive=True)
        with trio.fail_after(20 * WELCOME_TIMEOUT):
            code = await chat_over_websocket(options, never_ends(), out=io.StringIO(), err=err)
        ended = trio.current_time()
        nursery.cancel_scope.cancel()
    assert code == 1
    assert server.dropped_at is not None
    bound = _chat_ws._RECONNECT_FOR
    assert ended - server.dropped_at == pytest.approx(bound, abs=0.01), err.getvalue()
    first_wait = bound - 2 * _chat_ws._BACKOFF
    assert err.getvalue().splitlines()[1:] == [
        "tidings chat: connection closed (4009): too slow; reconnecting",
        f"tidings chat: reconnect 1 of {_chat_ws._RECONNECTS}: waiting up to {first_wait:g} s "
        f"for {url} to welcome it",
        f"tidings chat: cannot connect to {url}: GatewayTimeout: no welcome from {url} within "
        f"{first_wait:g} s (not a tidings gateway, or a hung one?); gave up: not welcomed "
        f"again within {bound:g} s of the drop",
    ]
