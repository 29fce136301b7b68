"""The ``deliver`` seam: a lane crashing right before a route's deliver() leaves that row
``unknown`` (its claim is durable) and never hands it to the route."""

from __future__ import annotations

import pytest

import tidings
from tidings.testing import FaultPlan, FaultRule, MemoryRoute, Seam


@pytest.mark.parametrize("action", ["raise", "cancel"])
async def test_a_crash_at_the_deliver_seam_leaves_the_claimed_row_unknown(db_path, workspace,
                                                                          action) -> None:
    plan = FaultPlan([FaultRule(Seam.DELIVER, child="route:*", action=action, nth=2)])
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handles = [await ctx.output.send_text(f"m{i}") for i in range(3)]
        outcomes = [await handle.wait() for handle in handles]
        second = await rt.delivery_status(handles[1].delivery_id)
        [record] = rt.dispatcher.supervisor.restart_log
    assert outcomes == ["delivered", "unknown", "delivered"]
    assert route.texts() == ["m0", "m2"]
    # "raise": never handed to the route; "cancel": cut short at deliver()'s first checkpoint
    started = ["m0", "m2"] if action == "raise" else ["m0", "m1", "m2"]
    assert [o.text for o in route.attempted] == started
    assert (second.status, second.attempts) == ("unknown", 1)
    assert (record.error_type, record.action) == ("InjectedFault", "restart")
    assert f"{action if action == 'cancel' else 'fault'} at deliver" in record.error


def test_the_deliver_seam_is_a_rule_seam() -> None:
    assert FaultRule("deliver").seam is Seam.DELIVER
