"""A websocket handshake that fails leaves no socket open: the server rejected it (a web
server answering 404, say), or the client gave up waiting (a peer that accepted the TCP
connection and says nothing). trio-websocket's ``open_websocket_url`` opened the TCP stream
inside and never closed it on those paths: the garbage collector did, later, with a
``ResourceWarning`` ("unclosed <socket ...>") in whatever ran then."""

from __future__ import annotations

import contextlib
import functools
import gc
import warnings
from collections.abc import Awaitable, Callable, Iterator

import pytest
import trio
from trio_websocket import ConnectionRejected, HandshakeError

from tidings.channels import GatewayClient, GatewayTimeout


@contextlib.contextmanager
def _no_socket_left() -> Iterator[None]:
    """Fail if a socket opened inside is left to the garbage collector."""
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


async def _not_found(stream: trio.SocketStream) -> None:
    """A web server: reads the request, answers 404 (with a body), closes."""
    async with stream:
        request = b""
        while b"\r\n\r\n" not in request:
            data = await stream.receive_some()
            if not data:
                return
            request += data
        await stream.send_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n"
                              b"Connection: close\r\n\r\nnot found")


async def _silent(stream: trio.SocketStream) -> None:
    await trio.sleep_forever()  # takes the TCP connection, never answers the handshake


async def _hang_up(stream: trio.SocketStream) -> None:
    await stream.receive_some()  # reads the handshake, closes without answering
    await stream.aclose()


async def _serve(nursery: trio.Nursery,
                 handler: Callable[[trio.SocketStream], Awaitable[None]]) -> str:
    [listener] = await nursery.start(functools.partial(trio.serve_tcp, handler, 0,
                                                       host="127.0.0.1"))
    return f"ws://127.0.0.1:{listener.socket.getsockname()[1]}"


async def _connect(url: str) -> None:
    async with GatewayClient.connect(url, token="gateway-test-token", conversation="sockets",
                                     welcome_timeout=5):
        pytest.fail("welcomed by a server that is no gateway")


@pytest.mark.parametrize(("handler", "error"), [
    pytest.param(_not_found, ConnectionRejected, id="rejected"),
    pytest.param(_silent, GatewayTimeout, id="cancelled"),
    pytest.param(_hang_up, HandshakeError, id="hung-up"),
])
async def test_a_failed_handshake_closes_its_socket(
        handler: Callable[[trio.SocketStream], Awaitable[None]], error: type[Exception],
        autojump_clock: trio.testing.MockClock) -> None:
    async with trio.open_nursery() as nursery:
        url = await _serve(nursery, handler)
        with _no_socket_left(), trio.fail_after(60), pytest.raises(error):  # (a guard)
            await _connect(url)
        nursery.cancel_scope.cancel()


async def _not_http(stream: trio.SocketStream) -> None:
    await stream.send_all(b"SSH-2.0-OpenSSH_9.6\r\n")  # another service on the port
    await stream.aclose()


async def _half_answer(stream: trio.SocketStream) -> None:
    await stream.receive_some()
    await stream.send_all(b"HTTP/1.1 101 Switching Protocols\r\n")  # then gone
    await stream.aclose()


@pytest.mark.parametrize("handler", [
    pytest.param(_hang_up, id="reads-then-closes"),
    pytest.param(_not_http, id="not-http"),
    pytest.param(_half_answer, id="half-an-answer"),
])
async def test_a_connection_that_ends_during_the_handshake_is_said_at_once(
        handler: Callable[[trio.SocketStream], Awaitable[None]],
        autojump_clock: trio.testing.MockClock) -> None:
    """trio-websocket's reader task ended without a word when the connection ended before the
    server's answer, and the handshake waited for the client's deadline: 30 s by default, then
    "no welcome ... (not a tidings gateway, or a hung one?)" with the reason lost."""
    async with trio.open_nursery() as nursery:
        url = await _serve(nursery, handler)
        start = trio.current_time()
        with _no_socket_left(), trio.fail_after(60), pytest.raises(HandshakeError) as caught:
            await _connect(url)
        assert trio.current_time() - start < 5  # not the welcome bound (5 s here)
        assert "ended before the server answered the websocket handshake" in str(caught.value)
        nursery.cancel_scope.cancel()


async def test_a_server_it_cannot_reach_is_a_handshake_error_naming_why() -> None:
    with trio.socket.socket() as probe:
        await probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # bound, not listening: the connection is refused
        with _no_socket_left(), pytest.raises(HandshakeError) as caught:
            await _connect(f"ws://127.0.0.1:{port}")
    assert isinstance(caught.value.__cause__, OSError)  # what tidings chat says


async def test_a_welcomed_connection_still_closes_cleanly(rt, serve_gateway) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        with _no_socket_left():
            async with GatewayClient.connect(url, token="gateway-test-token",
                                             conversation="sockets") as client:
                message_id = await client.message("hello")
                while (frame := await client.receive())["type"] != "accepted":
                    pass
            assert frame["id"] == message_id
