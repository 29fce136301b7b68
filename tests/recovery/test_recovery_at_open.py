"""What a start-up does with what the previous process left: claims, queued rows, progress."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import tidings
from tidings.testing import MemoryRoute


@pytest.mark.parametrize("recover", ["at_open", "manual"])
async def test_a_sending_row_of_a_dead_process_is_unknown_once_the_runtime_is_open(
        db_path, workspace, leftovers, recover) -> None:
    left = await leftovers(queued=0, progress=0)
    async with tidings.open_runtime(db_path, workspace=workspace, recover=recover) as rt:
        status = await rt.delivery_status(left.in_flight)
        events = await rt.delivery_events(left.in_flight)
        assert rt.store.epoch != left.epoch
    assert (status.status, status.outbox_status, status.work_status) == (
        "unknown", "unknown", "abandoned")
    assert status.attempts == 1  # the last attempt is kept
    assert status.claimant == f"epoch:{left.epoch}"
    assert "stopped before recording" in status.last_error
    assert [e.type for e in events] == ["delivery.queued", "delivery.sending", "delivery.unknown"]
    assert events[-1].data["claimant"] == f"epoch:{left.epoch}"


async def test_manual_recovery_leaves_queued_rows_alone_until_the_host_has_bound_its_routes(
        db_path, workspace, leftovers, wait_for_event) -> None:
    left = await leftovers(queued=3, progress=0)
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        assert [(await rt.delivery_status(i)).status for i in left.queued] == ["queued"] * 3
        rt.router.bind(left.session_id, route)
        report = await rt.recover()
        await wait_for_event(rt, left.queued[-1], "delivery.sent")
    assert report.queued_sessions == 1
    assert report.unknown == 0  # already done while opening
    assert route.texts() == ["m0", "m1", "m2"]  # in order; the unknown one is not replayed


async def test_a_send_before_manual_recovery_goes_after_the_queued_rows_it_left(
        db_path, workspace, leftovers, wait_for_event) -> None:
    """A host that binds its route and sends before ``rt.recover()``: the session's lane knows
    nothing yet of the rows the earlier process left ``queued``, so the new row (written
    claimed, the lane being idle) went out first. It now waits for the recovery's hand-over."""
    left = await leftovers(queued=3, progress=0)
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(left.session_id, route)
        async with rt.open_turn(left.session_id) as ctx:
            handle = await ctx.output.send_text("new")
        await trio.testing.wait_all_tasks_blocked()
        assert route.texts() == []  # held until the queued rows are handed over
        await rt.recover()
        await handle.wait()
    assert route.texts() == ["m0", "m1", "m2", "new"]


async def test_recovery_at_open_dispatches_queued_rows_which_are_unrouted_without_a_route(
        db_path, workspace, leftovers, wait_for_event) -> None:
    left = await leftovers(queued=2, progress=0)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        await wait_for_event(rt, left.queued[-1], "delivery.unrouted")
        statuses = [(await rt.delivery_status(i)).status for i in left.queued]
        counts = await rt.status_counts()
    assert statuses == ["unrouted", "unrouted"]
    assert counts == {"queued": 0, "sending": 0, "sent": 0, "failed": 0, "unknown": 1,
                      "unrouted": 2}


@pytest.mark.parametrize("recover", ["at_open", "manual"])
async def test_stale_progress_of_an_earlier_process_fails_instead_of_being_replayed(
        db_path, workspace, leftovers, wait_for_event, recover) -> None:
    left = await leftovers(queued=1, progress=2)
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, recover=recover) as rt:
        statuses = [await rt.delivery_status(i) for i in left.progress]
        rt.router.bind(left.session_id, route)
        if recover == "manual":
            await rt.recover()
        async with rt.open_turn(left.session_id) as ctx:
            fresh = await ctx.output.progress("fresh")
        assert await fresh.wait() in ("delivered", "unrouted")
    assert [(s.status, s.last_error, s.attempts) for s in statuses] == [
        ("failed", "stale_progress", 0)] * 2
    assert "p0" not in route.texts()
    assert "p1" not in route.texts()


async def test_recovering_twice_records_each_event_once(db_path, workspace, leftovers,
                                                       events_in, wait_for_event) -> None:
    left = await leftovers(queued=2, progress=1)
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(left.session_id, route)
        first = await rt.recover()
        await wait_for_event(rt, left.queued[-1], "delivery.sent")
        second = await rt.recover()
    assert (first.unknown, first.stale_progress, first.queued_sessions) == (0, 0, 1)
    assert (second.unknown, second.stale_progress, second.queued_sessions) == (0, 0, 0)
    counts = events_in(db_path)
    assert counts[(left.in_flight, "delivery.unknown")] == 1
    assert counts[(left.progress[0], "delivery.failed")] == 1
    assert all(counts[(i, "delivery.sent")] == 1 for i in left.queued)
    assert all(counts[(i, "delivery.sending")] == 1 for i in left.queued)
    assert route.texts() == ["m0", "m1"]


async def test_two_start_ups_in_a_row_record_each_event_once(db_path, workspace, leftovers,
                                                            events_in, wait_for_event) -> None:
    left = await leftovers(queued=2, progress=1)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        await wait_for_event(rt, left.queued[-1], "delivery.unrouted")
    after_first = events_in(db_path)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        report = await rt.recover()
    assert report == type(report)()  # nothing left to do
    assert events_in(db_path) == after_first
    assert after_first[(left.in_flight, "delivery.unknown")] == 1
    assert after_first[(left.progress[0], "delivery.failed")] == 1
    assert all(after_first[(i, "delivery.unrouted")] == 1 for i in left.queued)


async def test_recovery_pages_through_more_rows_than_one_batch(db_path, workspace,
                                                              wait_for_event) -> None:
    sessions = []
    stalled = []
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        for _ in range(5):  # five sessions, each with one row in flight and three queued
            session_id = await rt.create_session(channel="web")
            route = MemoryRoute()
            route.stall()
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                for i in range(4):
                    await ctx.output.send_text(f"{session_id}:{i}")
            sessions.append(session_id)
            stalled.append(route)
        for route in stalled:
            await route.wait_attempted(1)
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.scanner.batch = 2  # pages of two rows, two sessions
        routes = {sid: MemoryRoute() for sid in sessions}
        for sid, route in routes.items():
            rt.router.bind(sid, route)
        report = await rt.recover()
        last = await rt.deliveries(session_id=sessions[-1])
        await wait_for_event(rt, last[-1].delivery_id, "delivery.sent")
        for sid in sessions:
            for row in await rt.deliveries(session_id=sid):
                if row.status != "unknown":
                    await wait_for_event(rt, row.delivery_id, "delivery.sent")
        counts = await rt.status_counts()
    assert report.queued_sessions == 5
    assert counts["unknown"] == 5
    assert counts["sent"] == 15
    assert counts["queued"] == 0
    assert all(route.texts() == [f"{sid}:{i}" for i in (1, 2, 3)]
               for sid, route in routes.items())
