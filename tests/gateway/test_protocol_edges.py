"""Edges of the gateway's client protocol where two devices share a conversation, or a client
sends frames that cost the server work: each test forces one interleaving or one flood and
checks what a client sees (nothing twice, no well-behaved client closed, no free work).
"""

from __future__ import annotations

from typing import Any

import trio


async def _next_delivery(client: Any) -> dict[str, Any]:
    with trio.fail_after(10):
        while True:
            frame = await client.receive()
            if frame["type"] == "delivery":
                return frame


async def _nothing_more(client: Any) -> None:
    """A ``sync`` round trip: every frame before its ``synced`` answer must be no delivery."""
    await client.sync()
    with trio.fail_after(10):
        while (frame := await client.receive())["type"] != "synced":
            assert frame["type"] != "delivery", f"delivered again: {frame}"


def _gate_replay_reads(rt: Any) -> tuple[trio.Event, trio.Event]:
    """Wrap ``rt.stored_deliveries`` (the replay's read): the first call sets ``reading`` and
    waits for ``proceed`` before it reads."""
    real = rt.stored_deliveries
    reading, proceed = trio.Event(), trio.Event()

    async def gated(*args: Any, **kwargs: Any) -> Any:
        if not reading.is_set():
            reading.set()
            await proceed.wait()
        return await real(*args, **kwargs)

    rt.stored_deliveries = gated
    return reading, proceed


async def test_a_row_another_device_acks_during_a_replay_is_not_written_twice(
        rt, serve_gateway, connect, wait_status) -> None:
    """A row delivered live to a catching-up connection (queued behind its replay) and acked
    by the other device before the replay reads it is ``sent`` then: the replay writes it,
    and the live copy in the queue must not be written again."""
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as phone:
        session_id = phone.session_id
        reading, proceed = _gate_replay_reads(rt)
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as laptop:
            with trio.fail_after(10):
                await reading.wait()  # the laptop's replay is about to read
            handle = await rt.notify(session_id, "both")  # live: queued on both devices
            frame = await _next_delivery(phone)
            assert frame["delivery_id"] == handle.delivery_id
            await phone.ack(handle.delivery_id)
            with trio.fail_after(10):
                await wait_status(rt, handle.delivery_id, "sent")
            proceed.set()  # the replay now reads the row as ``sent``
            frame = await _next_delivery(laptop)
            assert frame["delivery_id"] == handle.delivery_id
            await laptop.ack(handle.delivery_id)
            await _nothing_more(laptop)
