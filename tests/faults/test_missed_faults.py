"""A cancel the fault plan aims at a child with no running incarnation is logged as missed."""

from __future__ import annotations

import logging

import trio
import trio.testing

from tidings.supervisor import Backoff, ChildSpec, FaultPlan, FaultRule, Seam, open_supervisor


async def test_a_cancel_aimed_at_a_child_in_backoff_is_logged_as_missed(caplog,
                                                                       autojump_clock) -> None:
    crashed = trio.Event()

    async def crash_once(ctx, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        if ctx.incarnation == 1:
            crashed.set()
            raise RuntimeError("boom")
        async for _ in ctx.mailbox:
            pass

    plan = FaultPlan([FaultRule(Seam.SEND, child="a", action="cancel")])
    spec = ChildSpec("a", crash_once, backoff=Backoff(min=10.0, max=10.0, jitter=0.0))
    with caplog.at_level(logging.INFO, logger="tidings.supervisor"):
        async with open_supervisor([spec], fault_plan=plan) as sup:
            await crashed.wait()
            await trio.testing.wait_all_tasks_blocked()
            assert sup.child_task("a") is None  # waiting out its backoff
            sup.mailbox("a").send_nowait("hello")
    missed = [r.getMessage() for r in caplog.records if "fault_missed" in r.getMessage()]
    assert missed == ['event=fault_missed child=a seam=send reason="no incarnation is running"']
    assert [r.error_type for r in sup.restart_log] == ["RuntimeError"]
