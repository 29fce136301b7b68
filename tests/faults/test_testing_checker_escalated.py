"""InvariantChecker.watch still checks a run that ends in an error (an escalation)."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import InjectedFault, RestartIntensityExceeded
from tidings.supervisor import ChildSpec, Intensity, open_supervisor
from tidings.testing import FaultPlan, FaultRule, InvariantChecker, Seam


async def _ticker(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async for _ in ctx.mailbox:
        await trio.lowlevel.checkpoint()


async def test_a_run_that_escalates_out_of_the_watch_is_still_checked() -> None:
    # watch() checked the censuses and the ledger only when its block ended normally: a run
    # that escalated (RestartIntensityExceeded, a way a run may end) out of the block, caught
    # around it, came back with no violation at all, the fault swallowed in it unlisted.
    plan = FaultPlan([FaultRule(Seam.SEND, child="a", times=1),
                      FaultRule(Seam.BEFORE_MESSAGE, child="a")])
    checker = InvariantChecker()

    async def run() -> None:
        with checker.watch():
            async with open_supervisor([ChildSpec("a", _ticker)], fault_plan=plan,
                                       intensity=Intensity(max_restarts=0, period=1)) as sup:
                try:
                    await sup.mailbox("a").send("x")
                except InjectedFault:
                    pass  # swallowed: nobody saw it
                await sup.mailbox("a").send("y")  # its crash escalates at once
                await trio.sleep_forever()

    with pytest.raises(RestartIntensityExceeded) as raised:
        await run()
    checker.ended(raised.value)
    assert [str(v) for v in checker.violations] == [
        "masked_fault: injected raise at send of a was never reported"]
    assert checker.ledger.escalations == 1
