"""``GatewayClient`` that meets a server frame it cannot use (not JSON, not an object, a
field a client acts on missing, no ``welcome``) raises ``GatewayClosed`` ``1002`` and closes
the websocket with that code and the reason, so the server's side (its log) says what the
client saw. Before, the local error said 1002 and the server was told 1000 (a normal close)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed, WebSocketRequest, serve_websocket

from tidings.channels import GatewayClient, GatewayClosed

WELCOME = json.dumps({"type": "welcome", "protocol": 1, "conversation": "bad",
                      "session_id": "s1", "last_seq": 0})

CASES = [
    ([WELCOME, "not json"], "not a tidings gateway: a frame that is not JSON"),
    ([WELCOME, "[1, 2]"], "not a tidings gateway: a frame that is not a JSON object (list)"),
    ([WELCOME, json.dumps({"type": "accepted"})], "not a tidings gateway: accepted.id is None"),
    ([json.dumps({"type": "pong"})], "expected welcome, got 'pong'"),
    ([json.dumps({"type": "welcome", "session_id": 5, "last_seq": 0})],
     "not a tidings gateway: welcome.session_id is 5"),
    ([WELCOME, json.dumps({"type": "accepted", "id": ["é" * 200]})],
     "not a tidings gateway: accepted.id is"),
]


class _Server:
    """Welcomes (or not) with *frames*, then records the close code and reason it is sent."""

    def __init__(self, frames: list[str]) -> None:
        self.frames = frames
        self.closed: tuple[Any, Any] | None = None
        self.done = trio.Event()

    async def handle(self, request: WebSocketRequest) -> None:
        ws = await request.accept()
        try:
            await ws.get_message()  # the hello
            for frame in self.frames:
                await ws.send_message(frame)
            while True:
                await ws.get_message()
        except ConnectionClosed as exc:
            self.closed = (exc.reason.code, exc.reason.reason)
        finally:
            self.done.set()


@pytest.mark.parametrize(("frames", "why"), CASES,
                         ids=["not-json", "not-object", "field", "no-welcome", "bad-welcome",
                              "long-reason"])
async def test_a_frame_the_client_cannot_use_closes_the_websocket_1002(
        frames: list[str], why: str) -> None:
    server = _Server(frames)
    async with trio.open_nursery() as nursery:
        listener = await nursery.start(serve_websocket, server.handle, "127.0.0.1", 0, None)
        with trio.fail_after(10):
            with pytest.raises(GatewayClosed) as caught:
                async with GatewayClient.connect(f"ws://127.0.0.1:{listener.port}",
                                                 token="gateway-test-token",
                                                 conversation="bad") as client:
                    await client.receive()
            await server.done.wait()
        nursery.cancel_scope.cancel()
    assert caught.value.code == 1002
    assert caught.value.reason.startswith(why)
    assert server.closed is not None
    code, reason = server.closed
    assert code == 1002
    assert reason.startswith(why[:60])  # a close reason holds 123 bytes at most
    assert len(reason.encode("utf-8")) <= 123
    assert caught.value.reason.startswith(reason.removesuffix("…"))


async def _connected(server: _Server,
                     act: Callable[[GatewayClient], Awaitable[object]]) -> None:
    """Serve *server*, connect a client to it, ``await act(client)``, and return once the
    server has seen the connection end."""
    async with trio.open_nursery() as nursery:
        listener = await nursery.start(serve_websocket, server.handle, "127.0.0.1", 0, None)
        with trio.fail_after(10):
            async with GatewayClient.connect(f"ws://127.0.0.1:{listener.port}",
                                             token="gateway-test-token",
                                             conversation="codes") as client:
                await act(client)
            await server.done.wait()
        nursery.cancel_scope.cancel()


# aclose(code) sent any integer as the close code: 5000, 999, or 1006 (a code RFC 6455 keeps
# for "closed without a close frame", never sent) went out on the wire, and the server closed
# the connection as a protocol error, far from the call that passed it. It is refused by name
# now, before anything is sent: the connection is still open, and closes normally after.
@pytest.mark.parametrize("code", [999, 1004, 1005, 1006, 1015, 2999, 5000, -1,
                                  pytest.param(True, id="bool"),
                                  pytest.param("1000", id="text")])
async def test_a_close_code_no_websocket_endpoint_may_send_is_refused_naming_code(
        code: object) -> None:
    async def refused_then_closed(client: GatewayClient) -> None:
        with pytest.raises(ValueError, match=r"^code: ") as caught:
            await client.aclose(code)  # type: ignore[arg-type]
        assert repr(code) in str(caught.value)
        assert client.ws.closed is None  # nothing was sent
        await client.aclose(4000)  # a code of the application's range goes out

    server = _Server([WELCOME])
    await _connected(server, refused_then_closed)
    assert server.closed == (4000, None)


@pytest.mark.parametrize("code", [1000, 1001, 1011, 3000, 4999])
async def test_a_close_code_an_endpoint_may_send_goes_out(code: int) -> None:
    server = _Server([WELCOME])
    await _connected(server, lambda client: client.aclose(code))
    assert server.closed is not None
    assert server.closed[0] == code
