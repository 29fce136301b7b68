"""InvariantChecker.surfaced: a fault reaches the test inside a group or as a cause, too."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import InjectedFault, TidingsError
from tidings.supervisor import ChildSpec, open_supervisor
from tidings.testing import FaultPlan, FaultRule, InvariantChecker, Seam


async def _ticker(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    async for _ in ctx.mailbox:
        await trio.lowlevel.checkpoint()


async def _send_in_a_nursery(sup) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(sup.mailbox("a").send, "x")


async def _send_wrapped(sup) -> None:
    try:
        await sup.mailbox("a").send("x")
    except InjectedFault as exc:
        raise TidingsError("the host's own error around it") from exc


@pytest.mark.parametrize("send", [_send_in_a_nursery, _send_wrapped],
                         ids=["in a group", "as a cause"])
async def test_a_fault_surfaced_inside_what_was_caught_is_accounted_for(send) -> None:
    # surfaced() looked at the error it was given only: the fault a nursery wrapped in an
    # ExceptionGroup (as trio's nurseries do), or the host's own error raised from it, was
    # reported as surfaced and still listed as a masked fault.
    plan = FaultPlan([FaultRule(Seam.SEND, child="a", times=1)])
    checker = InvariantChecker()
    with checker.watch():
        async with open_supervisor([ChildSpec("a", _ticker)], fault_plan=plan) as sup:
            try:
                await send(sup)
            except Exception as exc:  # noqa: BLE001 - what a host caught, group or not
                checker.surfaced(exc)
    assert [entry.accounted_by for entry in checker.ledger.entries] == [
        "surfaced as InjectedFault"]
    assert checker.violations == []
