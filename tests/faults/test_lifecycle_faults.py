"""A turn cancelled as it begins still reports that it began: its terminal event never comes
alone (seen in seeded fault runs: a turn task cancelled at its first checkpoint)."""

from __future__ import annotations

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
