"""An ack (``rt.confirm``) that lands while the row's ``deliver()`` still runs: the row is
``sent``, its handle ``delivered``, and ``statistics().dispatch.delivered`` counts it, once.
The ack found the row in no lane's unacked set yet and resolved its handle past the count:
a runtime whose clients ack fast reported fewer deliveries than it made."""

from __future__ import annotations

import trio

from tidings.testing import MemoryRoute

HANG = 30.0
"""Real-time hang guard: these runtimes run on trio's real clock."""


async def test_an_ack_while_deliver_runs_is_counted_once(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=4)
    route.stall()
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        handle = await rt.notify(session_id, "a")
        await route.wait_attempted(1)  # inside deliver(): not unacked yet
        assert await rt.confirm([handle.delivery_id]) == [handle.delivery_id]
        route.release()
        await route.wait_delivered(1)
        assert await handle.wait() == "delivered"
        second = await rt.notify(session_id, "b")  # behind it: the lane is past the first
        await route.wait_delivered(2)
        assert await rt.confirm([second.delivery_id]) == [second.delivery_id]
        assert await second.wait() == "delivered"
    stats = rt.statistics().dispatch
    assert (stats.delivered, stats.unacked_bytes) == (2, 0)
