"""A fault the plan injects at the shutdown seam is never lost: a child that ends without
reading its mailbox again still ends with it."""

from __future__ import annotations

import trio
import trio.testing

from tidings.supervisor import ChildSpec, FaultPlan, FaultRule, Seam, open_supervisor
from tidings.testing import InvariantChecker


async def test_a_shutdown_fault_reaches_a_child_that_never_reads_again() -> None:
    stop = trio.Event()

    async def reads_once(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        with trio.move_on_after(0):  # it looks at its mailbox once, then only at its own event
            await ctx.mailbox.receive()
        await stop.wait()

    plan = FaultPlan([FaultRule(Seam.SHUTDOWN, child="a", action="raise")])
    checker = InvariantChecker()
    with checker.watch():
        async with open_supervisor([ChildSpec("a", reads_once, shutdown_timeout=None)],
                                   fault_plan=plan) as sup:
            await trio.testing.wait_all_tasks_blocked()
            trio.lowlevel.current_trio_token().run_sync_soon(stop.set)
    [record] = sup.restart_log
    assert (record.action, record.error_type) == ("shutdown_error", "InjectedFault")
    assert "shutdown" in record.error
    assert checker.violations == []



async def test_a_shutdown_fault_overtaken_by_the_kill_is_still_recorded() -> None:
    """The child ignores its mailbox, so the ladder kills it (shutdown timeout 0): the fault
    injected at its shutdown is overtaken by that cancellation, and still recorded."""

    async def deaf(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await trio.sleep_forever()

    plan = FaultPlan([FaultRule(Seam.SHUTDOWN, child="a", action="raise")])
    checker = InvariantChecker()
    with checker.watch():
        async with open_supervisor([ChildSpec("a", deaf, shutdown_timeout=0)],
                                   fault_plan=plan) as sup:
            pass
    [record] = sup.restart_log
    assert (record.action, record.error_type) == ("shutdown_error", "InjectedFault")
    assert checker.violations == []


async def test_a_fault_overtaken_by_a_real_crash_is_logged_not_lost() -> None:
    """An injected cancel is on its way (it lands at the next checkpoint) when the child
    crashes with an error of its own: the record is that error, and the fault is logged as
    overtaken by it, so the ledger does not count it as masked."""

    async def crashes(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        if ctx.incarnation == 1:
            ctx.supervisor.fault_point(ctx.name, Seam.DELIVER)  # a cancel, not delivered yet
            raise RuntimeError("a crash of its own")
        async for _ in ctx.mailbox:
            pass

    plan = FaultPlan([FaultRule(Seam.DELIVER, child="a", action="cancel", times=1)])
    checker = InvariantChecker()
    with checker.watch():
        async with open_supervisor([ChildSpec("a", crashes)], fault_plan=plan) as sup:
            await trio.testing.wait_all_tasks_blocked()
    assert [r.error_type for r in sup.restart_log] == ["RuntimeError"]
    [entry] = checker.ledger.entries
    assert entry.accounted_by == "overtaken by RuntimeError"
    assert checker.violations == []


async def test_a_child_error_wrapped_by_its_own_nursery_is_recorded_as_itself() -> None:
    """A child whose mailbox loop runs inside a nursery of its own (the runtime's routes
    child does) gets the injected shutdown fault wrapped in an ExceptionGroup: its record
    names the fault, not the group."""

    async def with_a_nursery(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.sleep_forever)
            task_status.started()
            async for _ in ctx.mailbox:
                pass
            nursery.cancel_scope.cancel()

    plan = FaultPlan([FaultRule(Seam.SHUTDOWN, child="a", action="raise")])
    checker = InvariantChecker()
    with checker.watch():
        async with open_supervisor([ChildSpec("a", with_a_nursery)], fault_plan=plan) as sup:
            pass
    [record] = sup.restart_log
    assert (record.action, record.error_type) == ("shutdown_error", "InjectedFault")
    assert checker.violations == []
