"""A task the runtime took before its stop but abandoned as it stops (it failed at its child
start, so its function never ran) may hand what its ``on_abandon`` cannot do sync to a task of
its own: the runner takes that one though it is stopping, and the stop waits for it. Before,
it was refused (``RuntimeClosedError``), so a channel's worker abandoned at the stop left its
waiting turns with neither their notice nor their end
(tests/channels/test_dropped_turns_abandoned_at_stop.py)."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import RuntimeClosedError
from tidings.supervisor import FaultPlan, FaultRule, Seam

from ..real_time import fail_after_real


async def test_an_on_abandon_at_the_stop_may_start_a_task_the_stop_waits_for(
        db_path, workspace, autojump_clock) -> None:
    plan = FaultPlan([FaultRule(Seam.CHILD_START, child="task:job:*", times=1)])
    ran: list[str] = []

    async def job() -> None:
        ran.append("job")

    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0,
                                        fault_plan=plan) as rt:

            async def cleanup() -> None:
                with trio.CancelScope(shield=True):
                    await trio.sleep(3)  # takes a while: the stop must wait for it
                with pytest.raises(RuntimeClosedError):  # only on_abandon's start is taken
                    rt.start_task("other", job)
                ran.append("cleanup")

            rt.start_task("job", job, on_abandon=lambda: rt.start_task("cleanup", cleanup))
            # The stop begins now, before the job's child gets to run.
            stop_began = trio.current_time()
        assert ran == ["cleanup"]  # the job never ran; its cleanup did, within the stop
        assert trio.current_time() - stop_began >= 3
    assert len(plan.injected) == 1
    with pytest.raises(RuntimeClosedError):
        rt.start_task("late", job)
