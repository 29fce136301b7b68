"""A task the runtime's ``tasks`` supervisor had taken but never ran when that supervisor went
away (it crashed: its parent restarts it, or gives up) may still hand what its ``on_abandon``
cannot do sync to a task of its own, as at the stop (test_task_abandoned_at_stop.py): that
task is kept and run by the restarted supervisor, or, when none comes (the root gave up), by
the runtime's stop. Before, it was refused (``RuntimeClosedError``: the supervisor was
stopping), so a channel's worker abandoned so left its waiting turns with neither their
notice nor their end (tests/channels/test_dropped_turns_abandoned_at_tasks_restart.py).

The job is started in the very step in which the ``tasks`` supervisor crashes, before it
stops its children (tests/log_hook.py): whichever of the job's first step and that stop
trio runs first, the job never runs (the stop comes first, or it fails at its child start,
the second fault)."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import tidings
from tidings.errors import RestartIntensityExceeded
from tidings.supervisor import FaultPlan, FaultRule, Intensity, Seam

from ..log_hook import calling_on
from ..real_time import fail_after_real

CRASH = "event=fault_injected child=tasks "


def crash_plan() -> FaultPlan:
    return FaultPlan([FaultRule(Seam.RECEIVE, child="tasks", times=1),
                      FaultRule(Seam.CHILD_START, child="task:job:*", times=1)])


def tasks_incarnation(rt: tidings.Runtime) -> int:
    [tasks] = [child for child in rt.supervisor.statistics().children
               if child.name == "tasks"]
    return tasks.incarnation


async def test_an_on_abandon_as_the_tasks_supervisor_restarts_starts_a_task_it_runs(
        db_path, workspace) -> None:
    plan = crash_plan()
    ran: list[tuple[str, int]] = []

    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0,
                                        fault_plan=plan) as rt:

            async def job() -> None:
                ran.append(("job", tasks_incarnation(rt)))

            async def cleanup() -> None:
                ran.append(("cleanup", tasks_incarnation(rt)))

            def start_job() -> None:
                rt.start_task("job", job, on_abandon=lambda: rt.start_task("cleanup", cleanup))

            with calling_on(CRASH, start_job):
                rt.supervisor.mailbox("tasks").send_nowait("crash")
                await trio.testing.wait_all_tasks_blocked()
            # The job never ran; its cleanup ran once, under the restarted supervisor.
            assert ran == [("cleanup", 2)]
            assert len(rt.tasks) == 0
    assert [(record.child, record.action) for record in rt.supervisor.restart_log] == [
        ("tasks", "restart")]


async def test_with_no_restart_to_come_the_stop_runs_the_task_an_on_abandon_started(
        db_path, workspace, autojump_clock) -> None:
    plan = crash_plan()
    ran: list[str] = []

    async def job() -> None:
        ran.append("job")

    async def cleanup() -> None:
        with trio.CancelScope(shield=True):  # past the grace (0) it is cancelled at once
            await trio.sleep(1)
        ran.append("cleanup")

    async def crash_it() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0,
                                        fault_plan=plan,
                                        intensity=Intensity(max_restarts=0)) as rt:

            def start_job() -> None:
                rt.start_task("job", job, on_abandon=lambda: rt.start_task("cleanup", cleanup))

            with calling_on(CRASH, start_job):
                rt.supervisor.mailbox("tasks").send_nowait("crash")
                await trio.sleep_forever()  # cancelled when the runtime gives up

    with fail_after_real(30), pytest.raises(RestartIntensityExceeded) as failure:
        await crash_it()
    assert failure.value.child == "tasks"
    assert ran == ["cleanup"]  # the job never ran; the stop ran its cleanup in its place


async def test_a_task_an_on_abandon_started_is_not_lost_when_its_supervisor_goes_first(
        db_path, workspace) -> None:
    """The job fails at its start while the supervisor still runs, so its cleanup is taken
    there; then the supervisor crashes. Should its stop come before the cleanup's first step,
    the cleanup is kept for the next one too (before, it was abandoned in turn: its on_abandon
    is the last word, and a channel's notice task so lost its notices). Which comes first is
    trio's pick (it runs the tasks of a batch in a random order), so the crash is repeated:
    each order comes up in some of them."""
    crashes = 20
    plan = FaultPlan([FaultRule(Seam.RECEIVE, child="tasks"),
                      FaultRule(Seam.CHILD_START, child="task:job:*")])
    ran: list[int] = []

    async def job() -> None:
        raise AssertionError("it fails at its start")

    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(
                db_path, workspace=workspace, grace=0, fault_plan=plan,
                intensity=Intensity(max_restarts=crashes, period=60)) as rt:
            for crash in range(crashes):

                async def cleanup(crash: int = crash) -> None:
                    ran.append(crash)

                def last_word(cleanup=cleanup) -> None:  # type: ignore[no-untyped-def]
                    rt.start_task("cleanup", cleanup)

                rt.start_task("job", job, on_abandon=last_word)
                rt.supervisor.mailbox("tasks").send_nowait("crash")  # in the same step
                await trio.testing.wait_all_tasks_blocked()
                assert ran == list(range(crash + 1))  # each cleanup ran, once
            assert len(rt.tasks) == 0
    assert len(rt.supervisor.restart_log) == crashes
