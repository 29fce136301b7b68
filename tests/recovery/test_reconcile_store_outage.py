"""A bind whose reconcile failed (a store error) is asked again by the restarted scanner at
once (7a8c32e); with the error lasting, that was a tight crash loop: eleven restarts in a few
milliseconds, the root supervisor gave up (``RestartIntensityExceeded``) and the whole runtime
died, every session's delivery with it, for a storage hiccup the periodic scan rides out (it
fails once per ``scan_interval``). The scanner now restarts with a backoff (0.5 s doubling to
30 s): a lasting error is retried, never escalated, and the bind is asked once it clears."""

from __future__ import annotations

import trio

import tidings
from tidings.errors import StoreError
from tidings.store import recovery

HOUR = 3600.0


async def test_a_store_error_that_lasts_through_many_restarts_does_not_stop_the_runtime(
        db_path, workspace, leftovers, reconciling_route, wait_for_event,
        quick_autojump_clock) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    async with tidings.open_runtime(db_path, workspace=workspace, scan_interval=HOUR) as rt:
        real_read = rt.store.read
        failed: list[float] = []

        async def read(fn, *args):
            if fn is recovery.unknown_rows and len(failed) < 15:  # past the root's 10 in 60 s
                failed.append(trio.current_time())
                raise StoreError("disk I/O error")
            return await real_read(fn, *args)

        rt.store.read = read
        rt.router.bind(left.session_id, route)
        with trio.fail_after(HOUR / 2):  # hang guard (mock clock), far below the period
            await wait_for_event(rt, left.in_flight, "delivery.reconciled")
        status = (await rt.delivery_status(left.in_flight)).status
        restarts = [r.action for r in rt.supervisor.restart_log if r.child == "recovery"]
    assert len(failed) == 15
    assert restarts == ["restart"] * 15
    assert rt.scanner.scans == 0  # asked by the bind's retries, not by a scan
    assert route.asked == [[left.in_flight]]
    assert status == "sent"
