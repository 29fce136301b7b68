"""The "not answered" notice says what happened. A waiting turn is dropped not only by the
runtime's stop: also when the runtime's ``tasks`` supervisor crashes and its parent restarts
it (the worker running the session's turns is cancelled, the server runs on). Its notice
said "because the server stopped", which was false: the user looked for a stop of the server
that never happened. It now says the task running the turns failed (the server restarts it,
or gives up and stops, which the notice cannot know yet); a stop still says "the server
stopped" (test_terminal_unanswered_notice.py), and a channel closed and reopened says so
(test_closed_channel.py)."""

from __future__ import annotations

import logging

import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.supervisor import FaultPlan, FaultRule, Seam

from ..log_hook import calling_on
from ..real_time import fail_after_real
from .conftest import GatedAgent, RecordingChannel, rows

FAILED = "because the server's task running the turns failed before"


async def test_a_turn_dropped_as_the_tasks_supervisor_restarts_is_not_told_the_server_stopped(
        db_path, workspace, caplog) -> None:
    caplog.set_level(logging.INFO, logger="tidings")
    agent = GatedAgent()
    plan = FaultPlan([FaultRule(Seam.RECEIVE, child="tasks", times=1)])
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0,
                                        fault_plan=plan) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                       agent=agent)
            assert await channel.say("first", message_id="m1") == "started"
            await agent.wait_turns(1)
            assert await channel.say("second", message_id="m2") == "queued"
            restarted = trio.Event()
            with calling_on("event=child_restarted supervisor=tidings child=tasks ",
                            restarted.set):
                rt.supervisor.mailbox("tasks").send_nowait("crash")  # the worker is cancelled
                await restarted.wait()
            await channel.dispatch.wait_idle()
            # (the running turn the crash cut is told too, first:
            # test_running_turn_cut_by_tasks_crash.py)
            await channel.wait_for(lambda: len(channel.notices()) == 2)
            [record] = rt.supervisor.restart_log
            assert (record.child, record.action) == ("tasks", "restart")
            told = channel.notices()
    notices = [text for (text,) in rows(
        db_path, "SELECT text FROM outbox WHERE kind = 'notice' ORDER BY seq")]
    assert told == notices
    assert '"second"' in notices[1]
    assert FAILED in notices[1], notices[1]
    assert "stopped" not in notices[1], notices[1]
    [dropped] = [r for r in caplog.records if "event=turns_dropped" in r.getMessage()]
    assert "cause=tasks_crash" in dropped.getMessage()
