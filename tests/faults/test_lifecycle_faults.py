"""A turn cancelled as it begins still reports that it began: its terminal event never comes
alone (seen in seeded fault runs: a turn task cancelled at its first checkpoint)."""

from __future__ import annotations

import trio

import tidings
from tidings.testing import FaultPlan, FaultRule, MemoryChannel, Seam, lifecycle_violations


async def test_a_turn_cancelled_as_it_begins_reports_started_then_cancelled(db_path,
                                                                           workspace) -> None:
    plan = FaultPlan([FaultRule(Seam.CHILD_START, child="task:*", action="cancel", nth=1)])
    async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
        channel = MemoryChannel(rt)
        assert await channel.say("hello") == "started"
        await channel.wait_idle()
    assert len(plan.injected) == 1
    assert [(e.type, getattr(e, "reason", None)) for e in channel.events] == [
        ("started", None), ("cancelled", "shutdown")]
    assert lifecycle_violations(channel.events) == []


async def test_a_turn_task_that_fails_before_it_runs_wedges_nothing(db_path,
                                                                    workspace) -> None:
    """A fault at a turn task's child start means its function never ran: the runtime's task
    book-keeping and the channel's session must not wait for it (they did: the session took
    no more turns, and the runtime's exit waited for the task forever)."""
    plan = FaultPlan([FaultRule(Seam.CHILD_START, child="task:*", times=1)])
    async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
        channel = MemoryChannel(rt)
        assert await channel.say("lost") == "started"
        with trio.fail_after(20):  # a watchdog: the bug this pins is a hang
            await channel.wait_idle()
            assert rt.tasks.statistics().running == 0
            assert await channel.say("next") == "started"
            await channel.wait_idle()
    assert len(plan.injected) == 1
    assert [e.type for e in channel.events if e.type != "text_chunk"] == ["started", "completed"]
    assert channel.texts("message")[-1].endswith("next")
