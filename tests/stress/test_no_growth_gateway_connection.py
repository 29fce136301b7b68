"""A gateway connection that stays open while its conversation moves through many sessions
keeps nothing per session it has left.

A connection notes, per session, the highest seq it was sent and the highest its client
acked by seq (so an ack of what it was sent is free). Those notes were kept for the
connection's whole life: a chat page left open for weeks, its person starting ``/new``
sessions, kept two entries per session ever served there. Once the gateway forgets a session
(the conversation left it and nothing of it is in hand) they go too; an ack of one of its
seqs after that is looked up in the store, as any ack of a row sent elsewhere is.

Measured with ``tracemalloc``: the memory still held by what ``channels/_gateway_conn.py``
allocated, after 10 sessions and after 40 more, must not grow with the number of sessions.
"""

from __future__ import annotations

import gc
import pathlib
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager

import trio

import tidings
from tidings.channels import GatewayChannel, GatewayClient, GatewayConfig

TOKEN = "no-growth-gateway-token"


@contextmanager
def _tracing() -> Iterator[None]:
    tracemalloc.start()
    try:
        yield
    finally:
        tracemalloc.stop()


def _held_by_connections() -> int:
    """Bytes allocated by ``channels/_gateway_conn.py`` and still alive."""
    gc.collect()
    snapshot = tracemalloc.take_snapshot().filter_traces(
        [tracemalloc.Filter(True, f"*{pathlib.Path('channels', '_gateway_conn.py')}")])
    return sum(stat.size for stat in snapshot.statistics("filename"))


async def _session(client: GatewayClient) -> None:
    """One session's life on the open connection: a message answered, every delivery acked
    (by id, and the reply by seq too), then ``/new`` moves the conversation on."""
    await client.message("hi")
    while True:
        frame = await client.receive()
        if frame["type"] == "delivery":
            await client.ack(frame["delivery_id"])
            if frame["kind"] == "message":
                await client.ack_up_to(frame["seq"], session_id=frame["session_id"])
                break
    await client.message("/new")
    while (frame := await client.receive())["type"] != "accepted":
        if frame["type"] == "delivery":  # the answer to /new may come first
            await client.ack(frame["delivery_id"])


async def test_a_connection_keeps_nothing_per_session_its_conversation_left(
        db_path, workspace) -> None:
    with _tracing(), trio.fail_after(120):  # a hang guard, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0, rate=10_000.0,
                                                     burst=10_000))
            try:
                async with gateway.serving() as port, GatewayClient.connect(
                        f"ws://127.0.0.1:{port}", token=TOKEN, conversation="alpha") as client:
                    for _ in range(10):
                        await _session(client)
                    before = _held_by_connections()
                    for _ in range(40):
                        await _session(client)
                    after = _held_by_connections()
                    assert len(rt.router) <= 2  # the sessions left were forgotten
            finally:
                with trio.CancelScope(shield=True):
                    await gateway.aclose()
    # About 75 bytes a session before (two dict entries each); a few hundred bytes of slack
    # for what a frame in flight holds at the moment of a snapshot.
    assert after - before < 40 * 25, (before, after)
