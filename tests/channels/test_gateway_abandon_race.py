"""A gateway client that comes back while the rows of its departed connection are being
abandoned (their ``unknown`` commit still in flight) loses no ack and gets nothing twice.

When the last connection of a conversation leaves, the gateway turns that session's unacked
rows ``unknown``. The set of rows is taken synchronously when the abandon starts, while no
connection is in the hub, so rows handed to a client that returns meanwhile are never in it;
a row that the returning client gets by replay and acks is ``sent`` whichever commit lands
first (``unknown`` only leaves ``sending``; an ack takes ``unknown`` to ``sent``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

from tidings.actors import Runtime
from tidings.channels import GatewayChannel, GatewayClient, GatewayConfig
from tidings.testing import WriterGate, writer_gate

TOKEN = "gateway-abandon-race-token"


@asynccontextmanager
async def _serve(rt: Runtime) -> AsyncIterator[tuple[GatewayChannel, str]]:
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0))
    try:
        async with gateway.serving() as port:
            yield gateway, f"ws://127.0.0.1:{port}"
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()


def _connect(url: str, **hello: Any) -> Any:
    return GatewayClient.connect(url, token=TOKEN, conversation="alpha", **hello)


async def _next_delivery(client: GatewayClient) -> dict[str, Any]:
    with trio.fail_after(10):
        while True:
            frame = await client.receive()
            if frame["type"] == "delivery":
                return frame


async def _nothing_more(client: GatewayClient) -> None:
    """A ``sync`` round trip: every frame before its ``synced`` answer must be no delivery."""
    await client.sync()
    with trio.fail_after(10):
        while (frame := await client.receive())["type"] != "synced":
            assert frame["type"] != "delivery", f"delivered again: {frame}"


async def _wait_status(rt: Runtime, delivery_id: str, status: str) -> None:
    """Follow the runtime's events until the delivery records *status* (no polling)."""
    with trio.fail_after(10):
        async for event in rt.events(after_seq=0):
            if event.delivery_id == delivery_id and event.type == f"delivery.{status}":
                return


async def _status(rt: Runtime, delivery_id: str) -> str:
    return (await rt.delivery_status(delivery_id)).status


async def test_a_client_back_while_its_rows_are_abandoned_loses_no_ack_and_gets_nothing_twice(
        rt) -> None:
    opened = trio.Event()

    async def hold_the_writer(*, task_status: trio.TaskStatus[WriterGate]) -> None:
        async with writer_gate(rt.store) as gate:
            task_status.started(gate)
            await opened.wait()

    async with _serve(rt) as (gateway, url), trio.open_nursery() as nursery:
        async with _connect(url) as first:
            session_id = first.session_id
            old = await rt.notify(session_id, "old")
            assert (await _next_delivery(first))["delivery_id"] == old.delivery_id  # no ack
            gate = await nursery.start(hold_the_writer)  # every write now queues behind it
        # the last connection left: its abandon is in flight, held at the writer's gate
        await trio.testing.wait_all_tasks_blocked()
        assert not gateway.hub(gateway.conversation_named("alpha")).connections
        assert await _status(rt, old.delivery_id) == "sending"

        async with _connect(url, after_seq=0) as second:
            replayed = await _next_delivery(second)  # still ``sending``: replayed to it
            assert replayed["delivery_id"] == old.delivery_id
            await second.ack(old.delivery_id)  # its commit queues behind the abandon's
            fresh: list[Any] = []

            async def notify_fresh() -> None:
                fresh.append(await rt.notify(session_id, "fresh"))

            nursery.start_soon(notify_fresh)  # written (and claimed) after the gate opens
            await trio.testing.wait_all_tasks_blocked()
            gate.release()
            opened.set()

            frame = await _next_delivery(second)
            [handle] = fresh
            assert (frame["delivery_id"], frame["text"]) == (handle.delivery_id, "fresh")
            await _wait_status(rt, old.delivery_id, "sent")  # the ack was not lost
            # the fresh row was handed to a live client: the abandon did not touch it
            assert await _status(rt, handle.delivery_id) == "sending"
            await second.ack(handle.delivery_id)
            await _nothing_more(second)
            assert await _status(rt, handle.delivery_id) == "sent"
            seen = second.seen[session_id]

        async with _connect(url, after_seq=seen) as third:  # what it has: nothing to replay
            await _nothing_more(third)
        assert [await _status(rt, d) for d in (old.delivery_id, handle.delivery_id)] == [
            "sent", "sent"]
