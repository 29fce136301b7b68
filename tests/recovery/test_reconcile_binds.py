"""Binds the recovery scanner must reconcile: none is lost to a crash, and a re-bind while a
route is being asked does not discard that route's answer.

A bind of a reconciling route wakes the scanner, which asks that route about the session's
``unknown`` rows. These tests break that path on purpose (a fault plan, an injected cancel, a
store error, a wake while a manual ``recover()`` still runs) and check that the session is still
asked at once, not a ``scan_interval`` later: every runtime here has a period of an hour, and
``rt.scanner.scans == 0`` shows the period did not do it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
import trio
import trio.testing

import tidings
from tidings.errors import StoreError
from tidings.store import recovery
from tidings.supervisor import FaultPlan, FaultRule, Seam

HOUR = 3600.0


def _restarts(rt) -> list[str]:
    return [r.action for r in rt.supervisor.restart_log if r.child == "recovery"]


async def _settled(rt, wait_for_event, delivery_id: str) -> str:
    """The row's status once it was reconciled, or after ten minutes (mock clock) if never."""
    with trio.move_on_after(600):  # far below the hour-long period
        await wait_for_event(rt, delivery_id, "delivery.reconciled")
    return (await rt.delivery_status(delivery_id)).status


# --- 1. a bind is not lost when handling it fails ------------------------------------------


async def test_a_bind_whose_wake_a_fault_took_is_asked_after_the_restart(
        db_path, workspace, leftovers, reconciling_route, wait_for_event,
        autojump_clock) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    # Message 1 is recovery-at-open's poke; message 2 is the bind's wake: the fault takes it.
    plan = FaultPlan([FaultRule(Seam.BEFORE_MESSAGE, child="recovery", nth=2)])
    async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan,
                                    scan_interval=HOUR) as rt:
        await trio.testing.wait_all_tasks_blocked()  # the scanner took message 1
        assert plan.hits("recovery", Seam.BEFORE_MESSAGE) == 1
        rt.router.bind(left.session_id, route)
        status = await _settled(rt, wait_for_event, left.in_flight)
        restarts = _restarts(rt)
    assert [(r.seam, r.hit) for r in plan.injected] == [(Seam.BEFORE_MESSAGE, 2)]
    assert restarts == ["restart"]
    assert rt.scanner.scans == 0
    assert route.asked == [[left.in_flight]]
    assert status == "sent"


async def test_a_bind_whose_reconcile_is_cancelled_by_a_fault_is_asked_again_at_once(
        db_path, workspace, leftovers, reconciling_route, wait_for_event,
        autojump_clock) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    route.hang = True
    async with tidings.open_runtime(db_path, workspace=workspace, scan_interval=HOUR) as rt:
        rt.router.bind(left.session_id, route)
        await route.wait_asked(1)  # the scanner is inside the platform ask
        route.hang = False
        assert rt.supervisor.inject_cancel("recovery")  # what a "cancel" fault plan does
        status = await _settled(rt, wait_for_event, left.in_flight)
        restarts = _restarts(rt)
    assert restarts == ["restart"]
    assert rt.scanner.scans == 0
    assert route.asked == [[left.in_flight], [left.in_flight]]
    assert status == "sent"


async def test_a_bind_whose_reconcile_hits_a_store_error_is_asked_again_at_once(
        db_path, workspace, leftovers, reconciling_route, wait_for_event,
        autojump_clock) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    async with tidings.open_runtime(db_path, workspace=workspace, scan_interval=HOUR) as rt:
        real_read = rt.store.read
        failed: list[StoreError] = []

        async def read(fn, *args):
            if fn is recovery.unknown_rows and not failed:
                failed.append(StoreError("disk I/O error"))
                raise failed[0]
            return await real_read(fn, *args)

        rt.store.read = read
        rt.router.bind(left.session_id, route)
        status = await _settled(rt, wait_for_event, left.in_flight)
        restarts = _restarts(rt)
    assert len(failed) == 1
    assert restarts == ["restart"]
    assert rt.scanner.scans == 0
    assert route.asked == [[left.in_flight]]
    assert status == "sent"


async def test_a_route_bound_while_a_manual_recover_runs_is_asked_even_if_the_scanner_wakes_first(
        db_path, workspace, leftovers, reconciling_route, wait_for_event,
        autojump_clock) -> None:
    # One queued row makes recover() read queued heads twice: the bind is made after the first
    # read, and the second read lets the woken scanner run while recover() has not armed yet.
    left = await leftovers(queued=1, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    scan_interval=HOUR) as rt:
        real_read = rt.store.read
        bound: list[object] = []

        async def read(fn, *args):
            result = await real_read(fn, *args)
            if fn is recovery.queued_heads and not bound:  # its reconcile is behind us
                bound.append(rt.router.bind(left.session_id, route))
            return result

        rt.store.read = read
        report = await rt.recover()
        rt.store.read = real_read
        status = await _settled(rt, wait_for_event, left.in_flight)
    assert report.reconciled_sent == 0  # recover() itself did not see the route
    assert rt.scanner.scans == 0
    assert route.asked == [[left.in_flight]]
    assert status == "sent"


class _UnreadableAnswer(Mapping[str, str]):
    """A mapping that fails when read: a route bug, not a reason to restart the scanner."""

    def __getitem__(self, key: str) -> str:
        raise RuntimeError("the platform client lost its session")

    def __iter__(self) -> Iterator[str]:
        raise RuntimeError("the platform client lost its session")

    def __len__(self) -> int:
        return 1


async def test_an_answer_that_fails_to_be_read_leaves_the_row_unknown_without_a_crash(
        db_path, workspace, leftovers, reconciling_route, caplog) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route()

    async def reconcile(delivery_ids: list[str]) -> Mapping[str, str]:
        route.asked.append(list(delivery_ids))
        await trio.lowlevel.checkpoint()
        return _UnreadableAnswer()

    route.reconcile = reconcile
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(left.session_id, route)
        report = await rt.recover()
        status = (await rt.delivery_status(left.in_flight)).status
        restarts = _restarts(rt)
    assert report.undecided == 1
    assert status == "unknown"
    assert restarts == []
    assert "event=reconcile_bad_answer" in caplog.text


# --- 2. a re-bind while the old route is asked: its answer still counts ---------------------


@pytest.mark.parametrize("answer", ["sent", "missing"])
async def test_the_answer_of_the_route_asked_is_applied_after_the_session_is_rebound(
        db_path, workspace, leftovers, reconciling_route, wait_for_event, answer) -> None:
    """The old route's answer is a fact about the platform it speaks for; nothing else moves an
    ``unknown`` row meanwhile, so it is applied. ``sent`` then holds (dropping it and asking the
    new route, whose platform never saw the row, would deliver it twice); ``missing`` re-queues
    the row, and the lane delivers it through the live route, as after any re-queue."""
    left = await leftovers(queued=0, progress=0)
    old = reconciling_route({left.in_flight: answer})
    new = reconciling_route({left.in_flight: "missing"})  # it never saw the row
    old.hold()
    with trio.fail_after(30):  # hang guard (real time; it takes milliseconds)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=HOUR) as rt:
            rt.router.bind(left.session_id, old)
            await old.wait_asked(1)  # the scanner is asking the old route
            rt.router.bind(left.session_id, new)  # the person switched clients meanwhile
            old.let_answer()
            await wait_for_event(rt, left.in_flight, "delivery.reconciled")
            if answer == "missing":
                await wait_for_event(rt, left.in_flight, "delivery.sent")
            again = await rt.scanner.reconcile([left.session_id])  # the re-bind's ask
            status = (await rt.delivery_status(left.in_flight)).status
    assert old.asked == [[left.in_flight]]
    assert new.asked == []  # nothing was left unknown to ask it about
    assert (again.reconciled_sent, again.requeued, again.undecided) == (0, 0, 0)
    assert status == "sent"
    assert old.texts() == []
    assert new.texts() == ([] if answer == "sent" else ["in flight"])


async def test_a_route_bound_while_recover_asks_another_keeps_its_rows_in_order(
        db_path, workspace, leftovers, reconciling_route, autojump_clock) -> None:
    # recover="manual" holds a session's queued rows until recover() hands them on, so a
    # row its platform lacks goes out in its place. A route bound while the pass still asked
    # another session's platform was asked only after the hand-on, by the woken scanner: the
    # row cut in flight went out after the queued rows behind it ('m0', 'in flight', 'm1').
    slow = await leftovers(queued=0, progress=0)
    left = await leftovers(queued=2, progress=0)
    slow_route = reconciling_route()
    route = reconciling_route({left.in_flight: "missing"})
    with trio.fail_after(HOUR / 2):  # hang guard (mock clock), far below the period
        async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                        scan_interval=HOUR) as rt:
            slow_route.hold()
            rt.router.bind(slow.session_id, slow_route)
            async with trio.open_nursery() as nursery:
                reports = []

                async def recover() -> None:
                    reports.append(await rt.recover())

                nursery.start_soon(recover)
                await slow_route.wait_asked(1)  # the pass chose its sessions: not this one
                rt.router.bind(left.session_id, route)
                slow_route.let_answer()
            await route.wait_delivered(3)
    assert route.texts() == ["in flight", "m0", "m1"]
    assert reports[0].requeued == 1
