"""A session's worker whose task the runtime abandoned (it ended before it ran: a failure at
its child start) as the runtime stops leaves its waiting turns as a worker that ran and ended
at the stop does (test_dropped_turns_end_at_stop.py, test_dropped_turns.py): a turn the user
cancelled ends (``started``, then ``cancelled`` with the command's reason) and a waiting one
gets its "not answered" notice now, each once. Before, the abandoned worker's notice task
was refused (the runtime was stopping): neither came, only an error in the log.

The worker is started and abandoned within one step of the stop's beginning (its turns are
submitted and cancelled with no checkpoint between, as a channel does it), which messages
through ``handle_inbound`` (a store write each) cannot arrange."""

from __future__ import annotations

import logging

import pytest

import tidings
from tidings.channels import ChannelConfig, Inbound
from tidings.supervisor import FaultPlan, FaultRule, Seam

from ..real_time import fail_after_real
from .conftest import RecordingChannel, assert_m1_ended_and_m2_told


def inbound(text: str, message_id: str) -> Inbound:
    return Inbound(chat_id="c1", sender_id="u1", text=text, message_id=message_id)


@pytest.mark.parametrize("abandoned", [False, True], ids=["worker-ran", "worker-abandoned"])
async def test_the_turns_of_a_worker_abandoned_at_the_stop_end_as_dropped_ones(
        db_path, workspace, abandoned, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="tidings")
    plan = FaultPlan([FaultRule(Seam.CHILD_START, child="task:ops:*", times=1)]
                     if abandoned else [])
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0,
                                        fault_plan=plan) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"))
            conversation = channel.conversation_for(inbound("-", "m0"))
            session_id, _ = await channel.directory.resolve(conversation)
            dispatch = channel.dispatch
            assert dispatch.submit(session_id, conversation, inbound("cancelled", "m1")) == \
                "started"
            assert dispatch.submit(session_id, conversation, inbound("waiting", "m2")) == \
                "queued"
            assert dispatch.cancel(conversation, "cancel_command") == 1  # m1, not begun
            # The stop begins now, before the worker's task gets to run.
    assert len(plan.injected) == (1 if abandoned else 0)
    # The cancelled turn ends, once; the waiting one is told it was not answered, now.
    assert [event.message_id for event in channel.events] == ["m1", "m1"]
    assert_m1_ended_and_m2_told(channel, db_path, caplog)
