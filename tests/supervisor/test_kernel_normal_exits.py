"""A transient or temporary child that returns is no failure: it leaves no restart record.

README ("Looking at it"): the restart log records failures and restarts. A child whose
restart type lets it end (``transient``, ``temporary``) and that returns has done its job:
it is forgotten with a DEBUG ``child_exited`` line only, so children ending by the thousand
(one per session) never push the crashes out of the bounded log.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from tidings.supervisor import ChildSpec, open_supervisor


async def _worker(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
    task_status.started()
    async for message in ctx.mailbox:
        if message == "crash":
            raise ValueError("broke")
        if message == "return":
            return


@pytest.mark.parametrize("restart", ["transient", "temporary"])
@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_returns_leave_no_record_and_do_not_push_a_crash_out(
        autojump_clock, caplog, strategy, restart):
    caplog.set_level(logging.DEBUG, logger="tidings.supervisor")
    async with open_supervisor([ChildSpec("worker", _worker)], strategy=strategy,
                               restart_log_size=2) as sup:
        await sup.mailbox("worker").send("crash")
        await trio.testing.wait_all_tasks_blocked()
        for n in range(5):
            await sup.start_child(ChildSpec(f"session{n}", _worker, restart=restart))
            await sup.mailbox(f"session{n}").send("return")
        await trio.testing.wait_all_tasks_blocked()
        assert [c.name for c in sup.statistics().children] == ["worker"]
        assert sup.statistics().restarts == 1
    assert [(r.child, r.action) for r in sup.restart_log] == [("worker", "restart")]
    exited = [r.getMessage() for r in caplog.records if "event=child_exited" in r.getMessage()]
    assert len(exited) == 5
    assert all(r.levelno == logging.DEBUG for r in caplog.records
               if "event=child_exited" in r.getMessage())
    assert f"restart={restart}" in exited[0]
