"""A server that takes the connection and never says ``welcome`` (a wrong port, another
websocket server, a hung gateway) does not hang ``GatewayClient.connect`` nor ``tidings chat``:
after ``WELCOME_TIMEOUT`` the client gets :class:`GatewayTimeout` naming the URL, and the chat
ends as for a server it cannot reach (exit 1, one line)."""

from __future__ import annotations

import functools
import io
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
import trio
from trio_websocket import WebSocketRequest, serve_websocket

from tidings.channels import GatewayClient, GatewayTimeout
from tidings.channels._gateway_client import WELCOME_TIMEOUT
from tidings.errors import ValidationError
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket


async def _say_nothing_over_websocket(request: WebSocketRequest) -> None:
    await request.accept()
    await trio.sleep_forever()  # takes the hello, never answers it


async def _say_nothing_over_tcp(stream: trio.SocketStream) -> None:
    await trio.sleep_forever()  # not even the websocket handshake


async def _websocket(nursery: trio.Nursery) -> int:
    server = await nursery.start(serve_websocket, _say_nothing_over_websocket, "127.0.0.1", 0,
                                 None)
    return server.port


async def _tcp(nursery: trio.Nursery) -> int:
    [listener] = await nursery.start(functools.partial(
        trio.serve_tcp, _say_nothing_over_tcp, 0, host="127.0.0.1"))
    return listener.socket.getsockname()[1]


@asynccontextmanager
async def _silent(kind: Callable[[trio.Nursery], Awaitable[int]]) -> AsyncIterator[str]:
    async with trio.open_nursery() as nursery:
        yield f"ws://127.0.0.1:{await kind(nursery)}"
        nursery.cancel_scope.cancel()


SILENT = pytest.mark.parametrize("kind", [
    pytest.param(_websocket, id="websocket"),
    # (the socket of the handshake cancelled midway is closed: test_client_handshake_sockets)
    pytest.param(_tcp, id="tcp"),
])


@SILENT
async def test_connect_gives_up_on_a_server_that_never_welcomes(kind, autojump_clock) -> None:
    async with _silent(kind) as url:
        start = trio.current_time()
        with trio.fail_after(10 * WELCOME_TIMEOUT), pytest.raises(GatewayTimeout) as caught:
            async with GatewayClient.connect(url, token="gateway-test-token",
                                             conversation="silent"):
                pytest.fail("welcomed by a server that says nothing")
        assert trio.current_time() - start == pytest.approx(WELCOME_TIMEOUT)
    assert isinstance(caught.value, TimeoutError)
    assert str(caught.value) == (f"no welcome from {url} within {WELCOME_TIMEOUT:g} s (not a "
                                 "tidings gateway, or a hung one?)")


async def test_connect_takes_a_shorter_wait(autojump_clock) -> None:
    async with _silent(_websocket) as url:
        start = trio.current_time()
        with trio.fail_after(10 * WELCOME_TIMEOUT), pytest.raises(GatewayTimeout):
            async with GatewayClient.connect(url, token="gateway-test-token",
                                             conversation="silent", welcome_timeout=2.5):
                pytest.fail("welcomed by a server that says nothing")
        assert trio.current_time() - start == pytest.approx(2.5)


@SILENT
async def test_tidings_chat_ends_with_one_line_on_a_server_that_never_welcomes(
        kind, autojump_clock) -> None:
    out, err = io.StringIO(), io.StringIO()

    async def lines() -> AsyncIterator[str]:
        yield "hello\n"

    async with _silent(kind) as url:
        options = ChatOptions(url=url, token="gateway-test-token", conversation="silent",
                              interactive=False)
        with trio.fail_after(10 * WELCOME_TIMEOUT):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 1
    assert out.getvalue() == ""
    assert err.getvalue() == (f"tidings chat: cannot connect to {url}: GatewayTimeout: no "
                              f"welcome from {url} within {WELCOME_TIMEOUT:g} s (not a tidings "
                              "gateway, or a hung one?)\n")


async def _answer_not_json(request: WebSocketRequest) -> None:
    ws = await request.accept()
    await ws.get_message()
    await ws.send_message("hello yourself")  # some other websocket service
    await trio.sleep_forever()


async def test_tidings_chat_ends_with_one_line_on_a_peer_that_is_not_a_gateway(
        autojump_clock) -> None:
    """Before its first welcome the chat does not retry (as for a server it cannot reach):
    a wrong URL is said once, not five 'reconnecting' lines and a 'gave up' 15 s later."""
    err = io.StringIO()

    async def lines() -> AsyncIterator[str]:
        yield "hello\n"

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, _answer_not_json, "127.0.0.1", 0, None)
        options = ChatOptions(url=f"ws://127.0.0.1:{server.port}", token="gateway-test-token",
                              conversation="other", interactive=False)
        with trio.fail_after(10 * WELCOME_TIMEOUT):
            code = await chat_over_websocket(options, lines(), out=io.StringIO(), err=err)
        nursery.cancel_scope.cancel()
    assert code == 1
    assert "reconnecting" not in err.getvalue()
    [line] = err.getvalue().splitlines()
    assert line.startswith("tidings chat: connection closed (1002): not a tidings gateway: "
                           "a frame that is not JSON"), line


@pytest.mark.parametrize("bad", [-1, 0, math.nan, "30", True, None])
async def test_a_welcome_timeout_that_is_no_positive_number_is_refused_by_name(bad) -> None:
    with pytest.raises(ValidationError, match=r"^welcome_timeout: must be seconds > 0"):
        async with GatewayClient.connect("ws://127.0.0.1:9", token="gateway-test-token",
                                         conversation="bad", welcome_timeout=bad):
            pytest.fail("connected with a bad welcome_timeout")


@pytest.mark.parametrize("bad", [None, "4MiB", 0, -1, True, 1.5e6])
async def test_a_max_message_size_that_is_no_positive_integer_is_refused_by_name(bad) -> None:
    # None (read as 'no limit') or a string failed inside trio-websocket's reader once the
    # welcome came: a TypeError in an exception group; 0 or True closed the connection 1009
    # at the welcome, a GatewayClosed as though the server had refused.
    with pytest.raises(ValidationError, match=r"^max_message_size: must be an integer > 0"):
        async with GatewayClient.connect("ws://127.0.0.1:9", token="gateway-test-token",
                                         conversation="bad", max_message_size=bad):
            pytest.fail("connected with a bad max_message_size")
