"""runtime_fixture(fault_plan=FaultPlan(...)): each test gets a fresh copy of the plan.

A plan counts its hits and how often each rule fired; one instance shared by every test that
took the fixture let one test's consumed faults leak into the next (a ``times=1`` rule fired
in the first test only, so the second, alone or first in another order, passed or failed
depending on which tests ran before it)."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.testing import FaultPlan, FaultRule, MemoryRoute, runtime_fixture

PLAN = FaultPlan([FaultRule("deliver", times=1)])

once_rt = runtime_fixture(name="once_rt", fault_plan=PLAN)


@pytest.mark.parametrize("test", [1, 2])
async def test_every_test_of_a_plan_instance_gets_its_faults(once_rt, test) -> None:
    session_id = await once_rt.create_session(channel="web")
    once_rt.router.bind(session_id, MemoryRoute())
    async with once_rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hello")
    assert await handle.wait() == "unknown"  # the one fault hit the lane after the claim
    plan = once_rt.supervisor.fault_plan
    assert plan is not PLAN
    assert (plan.rules, plan.seed) == (PLAN.rules, PLAN.seed)
    assert [(record.seam, record.hit) for record in plan.injected] == [("deliver", 1)]
    assert PLAN.injected == []  # the instance given is left as it was: a template



@pytest.mark.parametrize("option", ["workspace", "db_path"])
def test_an_option_the_fixture_sets_itself_is_refused_by_name_when_made(option) -> None:
    # "options go to open_runtime", but the fixture gives open_runtime its own database and
    # workspace: runtime_fixture(workspace=...) was taken, and every test that used it then
    # failed in its setup ("open_runtime() got multiple values for keyword argument").
    with pytest.raises(ValidationError, match="the fixture's own") as raised:
        runtime_fixture(**{option: "somewhere"})
    assert raised.value.field == option
