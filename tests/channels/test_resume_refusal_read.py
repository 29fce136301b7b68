"""A refused ``/resume`` whose read of the conversation's session fails is still answered.

With ``dedupe_message_ids`` a refused ``/resume`` writes its message id record with the
refusal; when the conversation has no session, its direct answer is owed on that record too.
The session the answer went into was read after that write: when the read failed, the error
went to the caller with nothing owed in memory, so the platform's retry of the id, a
``duplicate``, was never answered (the record owes it to this very process, which a retry
does not take from). Now the read comes before the write, under the conversation's lock (a
refused ``/resume`` moves nothing): a read that fails writes nothing, and the retry is the
command's only run.
"""

from __future__ import annotations

import pytest

import tidings
from tidings.channels import ChannelConfig
from tidings.errors import StoreError

from .conftest import GatedAgent, RecordingChannel

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)
REFUSAL = "This conversation has no such session."


async def test_a_refused_resume_whose_session_read_fails_is_answered_at_its_retry(
        db_path, workspace, monkeypatch) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))

        async def failing_read(*args: object) -> str | None:
            raise StoreError("the read failed")

        with monkeypatch.context() as patch:
            patch.setattr(rt, "conversation_session", failing_read)
            with pytest.raises(StoreError):  # the platform's request failed: it retries
                await channel.say("/resume sess_nope", message_id="cmd")
        await channel.say("/resume sess_nope", message_id="cmd")  # the retry
        await channel.say("/resume sess_nope", message_id="cmd")  # and once more
        await channel.wait_idle()
        assert channel.notices() == [REFUSAL]
        assert channel.owed_answers.of("ops:chat:c1") == []
