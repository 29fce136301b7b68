"""``recover="manual"``: a send made before ``rt.recover()`` waits for the reconcile of the
``unknown`` rows the earlier process left in its session."""

from __future__ import annotations

import trio
import trio.testing

import tidings
from tidings.testing import ReconcilingMemoryRoute


async def test_a_send_before_manual_recovery_goes_after_an_unknown_row_proved_missing(
        db_path, workspace, leftovers) -> None:
    # The earlier process died handing "in flight" to its platform (unknown at open). A host
    # binds its reconciling route and sends before rt.recover(), as the README's manual
    # recovery has it: the session had no queued row, so it was not held, and "new" went out
    # at once; the recover's reconcile then found "in flight" missing and re-queued it, and
    # it went out after "new", out of the session's order.
    left = await leftovers(queued=0, progress=0)
    route = ReconcilingMemoryRoute()  # never handed "in flight": it answers "missing"
    with trio.fail_after(30):  # hang guard (real time; it takes milliseconds)
        async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                        scan_interval=3600) as rt:
            rt.router.bind(left.session_id, route)
            async with rt.open_turn(left.session_id) as ctx:
                handle = await ctx.output.send_text("new")
            await trio.testing.wait_all_tasks_blocked()
            assert route.texts() == []  # held until rt.recover() has asked the platform
            report = await rt.recover()
            assert await handle.wait() == "delivered"
            status = await rt.delivery_status(left.in_flight)
    assert route.reconciled == [left.in_flight]
    assert report.requeued == 1
    assert (status.status, status.attempts) == ("sent", 2)
    assert route.texts() == ["in flight", "new"]
