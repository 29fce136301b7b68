"""``run_chaos(plan=FaultPlan(...))`` gives each run a copy of the plan (its rules and seed, no
hits), as ``runtime_fixture`` does: a loop over seeds reusing one plan used it up, so a rule
that fires once (``times=1``) fired in the first run only and the later runs tested nothing.
The plan given is left as it was."""

from __future__ import annotations

import trio

from tidings.testing import FaultPlan, FaultRule, run_chaos


async def test_each_run_of_one_plan_gets_its_faults(tmp_path) -> None:
    plan = FaultPlan([FaultRule("deliver", times=1)], seed=7)
    injected = []
    for attempt in range(2):
        with trio.fail_after(60):  # hang guard
            report = await run_chaos(tmp_path / f"c{attempt}.db", tmp_path, seed=attempt,
                                     plan=plan, sessions=2, chats=0)
        assert report.violations == []
        injected.append(report.injected)
    assert injected[0] >= 1
    assert injected[1] == injected[0]
    assert plan.injected == []  # the template was not used up
