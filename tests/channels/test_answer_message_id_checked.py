"""``ChannelBase.answer`` checks the ``message_id`` a direct answer names, before sending.

A command's direct answer (no session) names the message it answers in its metadata
(``message_id``: the gateway's ``notice`` frame carries it, and its client acks the notice by
it). ``answer`` is a channel's public way to answer, and took any value there: a number, an
empty or invalid-Unicode id went to ``deliver()`` and on to a client's ``notice`` frame, which
then acked nothing (or sent an ack the gateway refuses). Refused by name, as ``command`` is.
"""

from __future__ import annotations

import pytest

import tidings
from tidings.channels import ChannelConfig
from tidings.channels._directory import Conversation
from tidings.errors import ValidationError

from .conftest import GatedAgent, RecordingChannel


@pytest.mark.parametrize("bad", [7, "", "bad\ud800", ["m1"]])
async def test_a_bad_message_id_of_an_answer_is_refused_by_name(
        db_path, workspace, bad) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig("ops"), agent=GatedAgent(block=False))
        conversation = Conversation("ops:chat:c1", "c1")
        with pytest.raises(ValidationError) as info:
            await channel.answer(conversation, None, "hi", command="clear", message_id=bad)
        assert info.value.field == "message_id"
        await channel.answer(conversation, None, "hi", command="clear", message_id="m1")
        [outbound] = channel.outbounds
        assert outbound.metadata["message_id"] == "m1"
