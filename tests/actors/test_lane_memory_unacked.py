"""An acking route's unacked rows count against the lane's memory budget.

A row delivered to an acking route (the gateway: ``ack_window = 32``) stays in its lane, with
its text, until the client acks it. Counted by the window alone, a client that never acks
held up to 32 texts of up to ``MAX_TEXT_BYTES`` each in one lane, none of it in
``lane_bytes``. The lane now also waits for acks once its unacked rows reach the budget (one
row always goes).

Waits run under a real-time hang guard (as in ``test_hunt_ack_window.py``: the runtime's SQLite
I/O runs in threads).
"""

from __future__ import annotations

import trio

from tidings.testing import MemoryRoute

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works."""

SIZE = 60_000
"""Characters of each text (ASCII)."""


async def _settle(rt, route: MemoryRoute, session_id: str, count: int) -> None:
    """Until the lane waits for room in its window, or *count* rows were delivered."""
    while True:
        lane = rt.dispatcher.lane(session_id)
        if len(route.delivered) >= count or (lane is not None and lane.waiting):
            return
        await trio.lowlevel.checkpoint()


async def test_a_client_that_never_acks_holds_no_more_than_the_lane_budget(rt) -> None:
    rt.dispatcher.lane_bytes = 200_000  # three texts fit, a fourth would not
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=32)
    rt.router.bind(session_id, route)
    count = 10
    texts = [chr(ord("a") + i) * SIZE for i in range(count)]
    with trio.fail_after(HANG):  # hang guard
        async with rt.open_turn(session_id, history_policy="transient") as ctx:
            handles = [await ctx.output.send_text(text) for text in texts]
        await _settle(rt, route, session_id, count)
        assert route.texts() == texts[:3]  # not all ten, unacked in memory
        assert rt.statistics().dispatch.unacked_bytes == 3 * SIZE  # and shown as held
        await rt.confirm([handles[0].delivery_id])  # an ack makes room for one more
        await route.wait_delivered(4)
        await _settle(rt, route, session_id, count)
        assert route.texts() == texts[:4]
        one = [await rt.confirm([handle.delivery_id]) for handle in handles[1:3]]
        assert one == [[handles[1].delivery_id], [handles[2].delivery_id]]
        await route.wait_delivered(6)
        await _settle(rt, route, session_id, count)
        assert route.texts() == texts[:6]


async def test_a_text_over_the_budget_still_goes_one_unacked_at_a_time(rt) -> None:
    rt.dispatcher.lane_bytes = SIZE // 2  # every text is over it
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=32)
    rt.router.bind(session_id, route)
    texts = [chr(ord("a") + i) * SIZE for i in range(3)]
    with trio.fail_after(HANG):  # hang guard
        async with rt.open_turn(session_id, history_policy="transient") as ctx:
            handles = [await ctx.output.send_text(text) for text in texts]
        for i, handle in enumerate(handles):
            await route.wait_delivered(i + 1)
            await _settle(rt, route, session_id, len(texts))
            assert route.texts() == texts[:i + 1]
            await rt.confirm([handle.delivery_id])
        assert [await handle.wait() for handle in handles] == ["delivered"] * 3
    assert rt.statistics().dispatch.unacked_bytes == 0
