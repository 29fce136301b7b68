"""A session's worker that the runtime's ``tasks`` supervisor had taken but never ran when it
crashed (its parent, the runtime's root supervisor, restarts it) leaves its waiting turns as a
worker abandoned at the stop does (test_dropped_turns_abandoned_at_stop.py): a turn the user
cancelled ends (``started``, then ``cancelled`` with the command's reason) and a waiting one
gets its "not answered" notice, each once, after the restart. Before, the task that was to
tell them was refused (that supervisor was going away) and the drop was only logged
(``notices=0``, "no task could write the notices"): the user never heard of their message.

The messages are accepted in the very step in which the ``tasks`` supervisor crashes (a
logging hook on the injected fault), before it stops its children: whichever of the worker's
first step and that stop trio runs first, the worker never runs (the stop comes first, or it
fails at its child start, the second fault), and so is abandoned while its supervisor goes
(see tests/log_hook.py)."""

from __future__ import annotations

import logging

import trio

import tidings
from tidings.channels import ChannelConfig, Inbound
from tidings.supervisor import FaultPlan, FaultRule, Seam

from ..log_hook import calling_on
from ..real_time import fail_after_real
from .conftest import RecordingChannel, assert_m1_ended_and_m2_told

CONFIG = ChannelConfig(name="ops", dispatch_mode="followup")


def inbound(text: str, message_id: str) -> Inbound:
    return Inbound(chat_id="c1", sender_id="u1", text=text, message_id=message_id)


async def test_the_turns_of_a_worker_abandoned_as_the_tasks_supervisor_restarts_are_told(
        db_path, workspace, caplog) -> None:
    caplog.set_level(logging.INFO, logger="tidings")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:  # its session's id
        channel = RecordingChannel(rt, CONFIG)
        session_id, _ = await channel.directory.resolve(
            channel.conversation_for(inbound("-", "m0")))
    plan = FaultPlan([
        FaultRule(Seam.RECEIVE, child="tasks", times=1),  # the crash
        # the worker's start (not the task that tells its turns, "...:unanswered:N")
        FaultRule(Seam.CHILD_START, child=f"task:ops:{session_id}:[0-9]*", times=1),
    ])
    accepted = trio.Event()
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0,
                                        fault_plan=plan) as rt:
            channel = RecordingChannel(rt, CONFIG)
            conversation = channel.conversation_for(inbound("-", "m0"))
            assert (await channel.directory.resolve(conversation))[0] == session_id
            dispatch = channel.dispatch

            def accept() -> None:  # as the tasks supervisor crashes, before it stops
                assert dispatch.submit(session_id, conversation,
                                       inbound("cancelled", "m1")) == "started"
                assert dispatch.submit(session_id, conversation,
                                       inbound("waiting", "m2")) == "queued"
                assert dispatch.cancel(conversation, "cancel_command") == 1  # m1, not begun
                accepted.set()

            with calling_on("event=fault_injected child=tasks ", accept):
                rt.supervisor.mailbox("tasks").send_nowait("crash")
                await accepted.wait()
            await dispatch.wait_idle()
            # The cancelled turn ends, once; the waiting one is told it was not answered.
            assert [(event.message_id, event.type, getattr(event, "reason", None))
                    for event in channel.events] == [
                ("m1", "started", None), ("m1", "cancelled", "cancel_command")]
            await channel.wait_for(channel.notices)  # delivered, once the writer has it
            [record] = rt.supervisor.restart_log
            assert (record.child, record.action) == ("tasks", "restart")
            # The restarted supervisor runs turns again (in another chat: the worker's fault
            # may not have fired yet, if the stop came first).
            await channel.say("after", chat_id="c2", message_id="m3")
            await channel.wait_for(lambda: ("m3", "completed") in [
                (event.message_id, event.type) for event in channel.events])
    notice = assert_m1_ended_and_m2_told(channel, db_path, caplog)
    # The server did not stop: the notice says what did happen (it said "the server stopped")
    assert "the server's task running the turns failed" in notice, notice
    assert "stopped" not in notice, notice
    assert channel.notices() == [notice]
