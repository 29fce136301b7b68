"""``dedupe_message_ids``: the id of ``/cancel`` is recorded before the turn is cancelled.

Recorded after the command (its answer written first), a crash in between left the turn
cancelled and the id unknown: the platform's resend of ``/cancel`` (it got no answer) was
handled as new and cancelled the turn of the message the user had sent since. A cancel dies
with its process anyway, so recording first loses nothing. The crash is the answer's write
failing ("the process died here"), then a new runtime on the same database.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import ChannelConfig
from tidings.errors import StoreError
from tidings.testing import writer_gate

from ..until import until
from .conftest import GatedAgent, RecordingChannel

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)


class DiesAnsweringCancel(RecordingChannel):
    """A channel whose process dies as it writes the answer to ``/cancel``."""

    async def answer(self, conversation: Any, session_id: str | None, text: str, *,
                     command: str | None = None, **kwargs: Any) -> None:
        if command == "cancel":
            raise StoreError("the process died here")
        await super().answer(conversation, session_id, text, command=command, **kwargs)


async def test_a_resent_cancel_after_a_crash_does_not_cancel_a_later_turn(
        db_path, workspace) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = DiesAnsweringCancel(rt, DEDUPE, agent=agent)
        assert await channel.say("hello", message_id="m0") == "started"
        await agent.wait_turns(1)
        with pytest.raises(StoreError):
            await channel.say("/cancel", message_id="m1")
        await channel.wait_idle()
    assert len(agent.cancelled_at) == 1  # the first turn was cancelled before the crash
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=agent)
        # The user speaks again before the platform resends the /cancel.
        assert await channel.say("hi", message_id="m2") == "started"
        await agent.wait_turns(1)
        assert await channel.say("/cancel", message_id="m1") == "duplicate"
        assert channel.turn_running(await rt.conversation_session("ops", "ops:chat:c1"))
        agent.release()
        await channel.wait_idle()
    assert agent.cancelled_at == []


async def test_a_message_sent_while_cancel_records_its_id_is_not_cancelled(rt) -> None:
    """The id is written under the conversation's lock: a message handled while that write
    is in flight waits, rather than start a turn that the ``/cancel`` before it cancels."""
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, DEDUPE, agent=agent)
    assert await channel.say("hello", message_id="m0") == "started"
    await channel.wait_idle()
    agent.block = True
    outcomes: dict[str, str] = {}

    async def say(text: str, message_id: str) -> None:
        outcomes[text] = await channel.say(text, message_id=message_id)

    writer = rt.supervisor.mailbox("writer")
    with trio.fail_after(10):  # a guard against hanging, not a wait
        async with trio.open_nursery() as nursery, writer_gate(rt.store) as gate:
            before = writer.depth
            nursery.start_soon(say, "/cancel", "m1")
            # Its id's write waits at the gate ("all tasks blocked" also holds while it
            # reads its id's record in a worker thread: the gate then opened too early).
            await until(lambda: writer.depth > before)
            nursery.start_soon(say, "hi", "m2")
            # "hi" reads its own id's record, then waits for the conversation's lock.
            await trio.testing.wait_all_tasks_blocked()
            await rt.store.readers.wait_idle()
            await trio.testing.wait_all_tasks_blocked()
            gate.release()
    assert outcomes == {"/cancel": "command", "hi": "started"}
    answers = ("Nothing to cancel.", "Cancelled the running request.")
    with trio.fail_after(10):
        await channel.wait_for(lambda: any(text in answers for text in channel.notices()))
    assert [text for text in channel.notices() if text in answers] == ["Nothing to cancel."]
    with trio.fail_after(10):
        await agent.wait_turns(2)  # "hi" reached the agent, not cancelled while it opened
    agent.release()
    await channel.wait_idle()
    assert "cancelled" not in channel.types()
