"""A client that reads a long backlog slowly but steadily, and says nothing, is alive.

The server's ``ping`` waited behind the connection's queue: such a client met it (and could
answer it) only once it had read everything queued before, so it was closed ``4008`` twice
``heartbeat_s`` after it last spoke, however steadily it read. A frame that goes out while
others wait behind it shows the client reading (the socket took it): it counts as heard from.
A client that reads nothing is still closed (tests/gateway/test_misbehaving_clients.py: a
silent client ``4008``, one that never reads ``4009``).
"""

from __future__ import annotations

import json
import math

import pytest
import trio
from trio_websocket import ConnectionClosed

from tidings.channels._gateway_client import open_transport

from ..real_time import fail_after_real
from .conftest import handed_to, hello_only

HEARTBEAT = 20.0
ROWS = 240  # 60 kB each: far more than the sockets' buffers take
PER_SECOND = 4  # frames the client reads per (trio) second: 60 s for the whole backlog


async def _queue_backlog(rt, gateway, ws, clock) -> list[str]:
    """Say hello on *ws* and queue ROWS rows for it with the clock stopped; their texts."""
    jumps = clock.autojump_threshold
    clock.autojump_threshold = math.inf  # no time passes while the rows queue
    session_id = await hello_only(ws)
    rt.dispatcher.lane_bytes = 1 << 30  # it acks nothing: no budget stops the rows
    texts = [f"{n} " + "x" * 60_000 for n in range(ROWS)]
    for text in texts:
        handle = await rt.notify(session_id, text)
        await handed_to(gateway, handle.delivery_id)
    clock.autojump_threshold = jumps
    return texts


def _serve(serve_gateway, rt):
    return serve_gateway(rt, heartbeat_s=HEARTBEAT, ack_window=5000, max_backlog_bytes=64 << 20)


async def _read_steadily(ws, got: list[str]) -> None:
    """Read PER_SECOND frames a second until the server closes, the deliveries' texts in
    *got*; never a word back (not even to a ping)."""
    while True:
        frame = json.loads(await ws.get_message())
        if frame["type"] == "delivery":
            got.append(frame["text"])
            if len(got) % PER_SECOND == 0:
                await trio.sleep(1)


async def test_a_client_reading_a_long_backlog_steadily_is_not_closed(
        rt, serve_gateway, autojump_clock) -> None:
    async with _serve(serve_gateway, rt) as (gateway, url), open_transport(url) as ws:
        with fail_after_real(120):  # hang guard, in real seconds
            texts = await _queue_backlog(rt, gateway, ws, autojump_clock)
            start = trio.current_time()
            got: list[str] = []
            with pytest.raises(ConnectionClosed) as closed:
                await _read_steadily(ws, got)
            read_for = trio.current_time() - start
        assert got == texts  # all of it, in order, before any close
        assert read_for > 2 * HEARTBEAT
        assert closed.value.reason.code == 4008  # once nothing more came: silent, closed


async def test_a_client_that_stops_reading_its_backlog_is_still_closed_4008(
        rt, serve_gateway, autojump_clock) -> None:
    """The same backlog, never read: the sockets' buffers fill, no frame goes out any more,
    and twice ``heartbeat_s`` later the client is closed (not kept for the frames the
    buffers took)."""
    async with _serve(serve_gateway, rt) as (gateway, url), open_transport(url) as ws:
        with fail_after_real(120):  # hang guard, in real seconds
            hub = gateway.hub(gateway.conversation_named("alpha"))
            await _queue_backlog(rt, gateway, ws, autojump_clock)
            [conn] = hub.connections
            await trio.sleep(2 * HEARTBEAT + 1)
            assert conn.close_code == 4008
            assert conn.written < ROWS  # it was closed with its backlog unread


async def test_a_silent_client_sent_a_row_now_and_then_is_still_closed_4008(
        rt, serve_gateway, autojump_clock) -> None:
    """Frames that go out one at a time, nothing behind them, show no reading (the sockets'
    buffers take them whether or not anyone reads): a client that says nothing is closed
    twice ``heartbeat_s`` after its hello, as before, however often it is sent something."""
    async with _serve(serve_gateway, rt) as (gateway, url), open_transport(url) as ws:
        with fail_after_real(60):  # hang guard, in real seconds
            session_id = await hello_only(ws)
            [conn] = gateway.hub(gateway.conversation_named("alpha")).connections
            start = trio.current_time()
            closed_at = None
            for n in range(12):
                await rt.notify(session_id, f"now and then {n}")
                await trio.sleep(HEARTBEAT / 4)
                if closed_at is None and not conn.alive:
                    closed_at = trio.current_time()
        assert conn.close_code == 4008
        assert closed_at is not None
        assert closed_at - start <= 2 * HEARTBEAT + HEARTBEAT / 4
