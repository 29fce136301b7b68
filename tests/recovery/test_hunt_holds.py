"""Holds (Dispatcher.hold_binds / hold_sessions): they end, they do not leak, they do not hold
up the runtime's stop."""

from __future__ import annotations

import trio
import trio.testing

import tidings
from tidings.testing import MemoryRoute


async def test_a_lane_waiting_on_a_manual_recovery_hold_does_not_hold_up_the_exit(
        db_path, workspace, leftovers, autojump_clock) -> None:
    """recover="manual", a send into a session with queued leftovers, and an exit before
    rt.recover(): the lane waits on the hold having claimed nothing, so the stop has nothing
    to let it finish; it waited the whole grace all the same."""
    left = await leftovers(queued=2, progress=0)
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    grace=30.0) as rt:
        rt.router.bind(left.session_id, route)
        async with rt.open_turn(left.session_id) as ctx:
            handle = await ctx.output.send_text("new")
        await trio.testing.wait_all_tasks_blocked()
        lane = rt.dispatcher.lane(left.session_id)
        assert lane is not None
        assert lane.taking  # waiting on the hold
        started = trio.current_time()
    assert trio.current_time() - started < 30.0
    assert route.texts() == []
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert (await rt.delivery_status(handle.delivery_id)).outbox_status in ("queued",
                                                                                 "unrouted")
