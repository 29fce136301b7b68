"""tidings serve's stop at its edges: a connection that never became a client does not hold
it up, and a second stop request cuts what the runtime still waits for."""

from __future__ import annotations

import functools

import pytest
import trio
from trio_websocket import ConnectionClosed, wrap_client_stream

from tidings.channels import GatewayChannel, GatewayClient, GatewayConfig, _gateway
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl

from ..until import until

TOKEN = "serve-test-token"


def _config(tmp_path, **flags):
    flags = {"db": str(tmp_path / "serve.db"), "port": 0, "token": TOKEN,
             "workspace": str(tmp_path), **flags}
    return load_config(**flags)


async def _accepted(gateway: GatewayChannel, count: int) -> None:
    """Return once *gateway* has accepted *count* TCP connections. A stop before the accept
    would leave them in the kernel's backlog, reset with the listener: not what is tested.
    Nothing public counts the connections not upgraded yet, so the listeners' own record
    of them is read (channels/_gateway_listen.py)."""
    await until(lambda: len(gateway._handshakes.streams) >= count)


async def test_a_connection_that_never_upgrades_does_not_hold_up_the_stop(tmp_path,
                                                                          monkeypatch) -> None:
    # Real time (sockets, a database): the handshake wait is made far longer than the bound,
    # so that only a stop that waits for it trips the bound, never a busy machine. So is the
    # grace: the gateway child's shutdown timeout (grace + 5 s) would end that wait first.
    monkeypatch.setattr(_gateway, "_HANDSHAKE_WAIT", 600.0)
    control = StopControl()
    with trio.fail_after(60):  # a stop that waits for the handshake wait (600 s) fails
        async with trio.open_nursery() as nursery:
            info = await nursery.start(functools.partial(
                serve, _config(tmp_path, grace=600.0), control))
            silent = await trio.open_tcp_stream("127.0.0.1", info.port)  # never says GET
            half = await trio.open_tcp_stream("127.0.0.1", info.port)  # half a request
            await half.send_all(b"GET / HTTP/1.1\r\nHost: x\r\n")
            await _accepted(info.gateway, 2)
            control.request("test")
        # The server closed both sockets: each reads end of stream, not a hang.
        assert await silent.receive_some(100) == b""
        assert await half.receive_some(100) == b""
        await silent.aclose()
        await half.aclose()


async def test_a_connection_that_upgrades_after_the_stop_began_is_refused_at_once(rt) -> None:
    """Accepted before the stop, upgraded after it: no hello wait starts (it would have
    begun after the stop ended the others, and held the stop up for ``hello_timeout``)."""
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0, hello_timeout=600))
    with trio.fail_after(60):  # a stop that waits for a hello wait (600 s) fails
        async with trio.open_nursery() as nursery, gateway.serving() as port:
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await _accepted(gateway, 1)
            gateway.stop_accepting()
            ws = await wrap_client_stream(nursery, stream, "127.0.0.1", "/")
            with pytest.raises(ConnectionClosed) as caught:
                await ws.get_message()
            assert (caught.value.reason.code, caught.value.reason.reason) == (
                1001, "server shutting down")
            await ws.aclose()
            await stream.aclose()
        await gateway.aclose()


async def test_a_second_stop_request_cuts_the_lanes_grace_of_the_runtimes_exit(
        tmp_path) -> None:
    """The second request arrives while the runtime's exit waits (up to ``grace``) for a
    lane still in a delivery: the lanes stop at once, as the README promises."""
    control = StopControl()
    in_delivery = trio.Event()

    async def stuck_deliver(outbound) -> None:  # a delivery the gateway's close does not end
        in_delivery.set()
        await trio.sleep_forever()

    with trio.fail_after(60):  # the lanes' grace is 600 s: only a stop that waits for it fails
        async with trio.open_nursery() as nursery:
            info = await nursery.start(functools.partial(
                serve, _config(tmp_path, grace=600.0), control))
            rt = info.gateway.runtime
            info.gateway.deliver = stuck_deliver
            async with GatewayClient.connect(info.url, token=TOKEN, conversation="a") as client:
                await client.message("hello")
                await in_delivery.wait()
            control.request("first")
            # The runtime's exit has begun its lane wait: Dispatcher.stop() sets ``stopping``
            # and enters the wait (its grace read) with no checkpoint in between.
            await until(lambda: rt.dispatcher.stopping)
            control.request("second")
