"""A ``DeliveryHandle`` keeps its first outcome (README "Claims"): an ``unrouted`` or
``unknown`` row that moves on afterwards (handed back with ``rt.requeue`` and delivered, or
acked) still reads ``unrouted`` / ``unknown`` on its handle, while
``rt.delivery_status(id).status`` is the durable state."""

from __future__ import annotations

import trio

from tidings.testing import MemoryRoute

from ..until import until
from .conftest import rows

HANG = 30  # hang guard, seconds


async def _sent(rt, db_path, delivery_id: str) -> None:
    """Wait until the row is recorded ``sent``; then the durable status says so."""
    await until(lambda: rows(db_path, "SELECT status FROM outbox WHERE delivery_id = ?",
                             delivery_id) == [("sent",)])
    assert (await rt.delivery_status(delivery_id)).status == "sent"


async def test_an_unrouted_handle_stays_unrouted_after_requeue_and_delivery(
        rt, db_path, autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    with trio.fail_after(HANG):
        handle = await rt.notify(session_id, "a")  # no route yet
        assert await handle.wait() == "unrouted"
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        assert await rt.requeue(session_id, [handle.delivery_id]) == [handle.delivery_id]
        await route.wait_delivered(1)
        await _sent(rt, db_path, handle.delivery_id)
    assert [outbound.text for outbound in route.delivered] == ["a"]
    assert handle.status == "unrouted"
    assert await handle.wait() == "unrouted"


async def test_an_unknown_handle_stays_unknown_after_a_late_ack(rt, db_path,
                                                                autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=1)
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        handle = await rt.notify(session_id, "a")
        await route.wait_delivered(1)
        assert await rt.abandon_unacked(session_id) == [handle.delivery_id]
        assert await handle.wait() == "unknown"
        await rt.confirm([handle.delivery_id])
        await _sent(rt, db_path, handle.delivery_id)
    assert handle.status == "unknown"
    assert await handle.wait() == "unknown"
