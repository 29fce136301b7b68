"""The fault ledger hears the kernel whatever level a host set on a ``tidings.*`` logger."""

from __future__ import annotations

import logging

import pytest
import trio

from tidings.errors import InjectedFault
from tidings.supervisor import ChildSpec, open_supervisor
from tidings.testing import FaultPlan, FaultRule, InvariantChecker, Seam


async def _ticker(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async for _ in ctx.mailbox:
        await trio.lowlevel.checkpoint()


@pytest.fixture
def quiet_kernel():
    """A host that keeps the kernel's INFO lines out of its test logs."""
    logger = logging.getLogger("tidings.supervisor")
    level = logger.level
    logger.setLevel(logging.WARNING)
    yield logger
    logger.setLevel(level)


async def test_a_masked_fault_is_reported_with_the_kernel_logger_quietened(quiet_kernel) -> None:
    # The ledger raised only the level of 'tidings': the kernel's fault_injected and restart
    # lines (INFO) died at 'tidings.supervisor', so the ledger saw no fault at all, and a fault
    # the sender swallowed passed the "no fault was masked" check.
    plan = FaultPlan([FaultRule(Seam.SEND, child="a", times=1)])
    checker = InvariantChecker()
    with checker.watch():
        async with open_supervisor([ChildSpec("a", _ticker)], fault_plan=plan) as sup:
            try:
                await sup.mailbox("a").send("x")
            except InjectedFault:
                pass  # swallowed: nobody saw it
    assert [entry.child for entry in checker.ledger.entries] == ["a"]
    assert [v.invariant for v in checker.violations] == ["masked_fault"]
    assert quiet_kernel.level == logging.WARNING  # the host's level, back once it is done
