"""A session lane that crashes with a row taken but its platform I/O not begun.

The lane actor's settle (``actors/_lane_actor.py``) records such a row ``failed`` ("the
session route crashed before delivering": the route never saw it, and a message that was in
hand at a crash is not retried), the row it was delivering ``unknown`` (pinned in
``test_lane_faults.py``). This pins the first: the route is never called for it, its handle
says ``failed``, the row, its work item and its events agree, and the session's later rows
still go out, in order.
"""

from __future__ import annotations

import pathlib

import trio
import trio.testing

from tidings.testing import writer_gate

from .conftest import rows, stalled_session

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works."""


async def test_a_row_taken_by_a_lane_that_crashes_before_its_deliver_is_failed(
        rt, db_path: pathlib.Path) -> None:
    session_id, route = await stalled_session(rt)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("first")
            await route.wait_attempted(1)  # the lane is inside deliver(first)
            second = await ctx.output.send_text("second")  # queued: the lane claims it
            async with writer_gate(rt.store) as gate:
                route.release()  # first's sent and second's claim wait behind the gate
                await trio.testing.wait_all_tasks_blocked()
                lane = rt.dispatcher.lane(session_id)
                assert lane.current.delivery_id == second.delivery_id  # its claim waits
                assert rt.dispatcher.supervisor.inject_cancel(lane.name)
                await trio.testing.wait_all_tasks_blocked()
                gate.release()
            assert await first.wait() == "delivered"
            assert await second.wait() == "failed"
            third = await ctx.output.send_text("third")
            assert await third.wait() == "delivered"
        status = await rt.delivery_status(second.delivery_id)
    assert route.texts() == ["first", "third"]  # the route never saw the second
    assert (status.outbox_status, status.work_status) == ("failed", "failed")
    assert "crashed before delivering" in status.last_error
    events = [kind for (kind,) in rows(
        db_path, "SELECT type FROM events WHERE delivery_id = ? ORDER BY event_seq",
        second.delivery_id)]
    # Its claim committed behind the gate, after the restarted lane wrote the settle: a row
    # claimed but never handed to a route ends ``failed``, never ``sent`` or ``unknown``.
    assert events == ["delivery.queued", "delivery.sending", "delivery.failed"]
