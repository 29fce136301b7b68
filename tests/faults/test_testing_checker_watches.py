"""One InvariantChecker over several watches (a run, then its recovery): each fault once."""

from __future__ import annotations

import trio

from tidings.errors import InjectedFault
from tidings.supervisor import ChildSpec, open_supervisor
from tidings.testing import FaultPlan, FaultRule, InvariantChecker, Seam


async def _ticker(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async for _ in ctx.mailbox:
        await trio.lowlevel.checkpoint()


async def test_a_masked_fault_is_one_violation_however_many_watches_follow() -> None:
    # Each watch() added a masked_fault for every fault of the ledger still unaccounted, the
    # earlier watches' too: one fault swallowed in the run was listed again by the recovery's
    # watch, two violations for one fault (three after a third watch).
    plan = FaultPlan([FaultRule(Seam.SEND, child="a", times=1)])
    checker = InvariantChecker()
    for _phase in range(3):
        with checker.watch():
            async with open_supervisor([ChildSpec("a", _ticker)], fault_plan=plan) as sup:
                try:
                    await sup.mailbox("a").send("x")
                except InjectedFault:
                    pass  # swallowed in the first phase only: the rule fires once
    assert [str(v) for v in checker.violations] == [
        "masked_fault: injected raise at send of a was never reported"]
