"""``dedupe_message_ids``: a session command answered with no session (``/clear`` or
``/cancel`` with none, a refused ``/resume`` with none) has its message id recorded with its
effect, before the answer, which goes straight to ``deliver()``. When that ``deliver()``
raises (the platform call failed), the platform's retry of the same id is a ``duplicate``:
the command must not run again (a ``/clear`` retried would clear the session the user started
since), yet the answer was never given. The channel keeps the owed answer and sends it to
the retry, once."""

from __future__ import annotations

import functools

import pytest
import trio
import trio.testing

import tidings
from tidings.actors import Outbound
from tidings.channels import ChannelConfig, Inbound
from tidings.channels._owed_answers import MAX_OWED_ANSWERS, Owed, OwedAnswers
from tidings.testing import writer_gate

from ..until import until
from .conftest import GatedAgent, RecordingChannel

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)


class PlatformDown(Exception):
    pass


class FailingOnce(RecordingChannel):
    """Its platform call fails for the next ``failures`` answers that have no session."""

    failures = 0

    async def deliver(self, outbound: Outbound) -> None:
        if outbound.session_id is None and self.failures:
            self.failures -= 1
            raise PlatformDown("the platform call failed")
        await super().deliver(outbound)


def direct(channel: RecordingChannel) -> list[tuple[str, object]]:
    """``(text, command)`` of the answers that went out with no session."""
    return [(o.text, o.metadata.get("command")) for o in channel.outbounds
            if o.session_id is None]


@pytest.mark.parametrize(("text", "command", "answer"), [
    ("/clear", "clear", "Cleared. Your next message starts a new session."),
    ("/cancel", "cancel", "Nothing to cancel."),
    ("/resume sess_nope", "resume", "This conversation has no such session."),
])
async def test_the_retry_of_a_sessionless_command_whose_answer_failed_gets_the_answer(
        db_path, workspace, text, command, answer) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = FailingOnce(rt, DEDUPE, agent=agent)
        channel.failures = 1
        with pytest.raises(PlatformDown):
            await channel.say(text, message_id="c1")
        assert direct(channel) == []
        # The user goes on meanwhile: a session and a running turn the retry must not touch.
        assert await channel.say("hello", message_id="m1") == "started"
        await agent.wait_turns(1)
        [session_id] = channel.directory.sessions()
        assert await channel.say(text, message_id="c1") == "duplicate"
        assert direct(channel) == [(answer, command)]
        # The command did not run again: the session stays, its turn runs on.
        assert channel.directory.sessions() == [session_id]
        assert channel.turn_running(session_id)
        assert [e.type for e in channel.events if e.type == "cancelled"] == []
        # Given once: a further retry is a plain duplicate.
        assert await channel.say(text, message_id="c1") == "duplicate"
        assert direct(channel) == [(answer, command)]
        agent.release()
        await channel.wait_idle()


async def test_an_owed_answer_whose_second_send_fails_is_still_owed(db_path,
                                                                     workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 2
        for _ in range(2):
            with pytest.raises(PlatformDown):
                await channel.say("/cancel", message_id="c1")
        assert await channel.say("/cancel", message_id="c1") == "duplicate"
        assert direct(channel) == [("Nothing to cancel.", "cancel")]


async def test_a_caller_cancelled_while_the_answer_is_sent_leaves_it_owed(
        db_path, workspace) -> None:
    # The platform gave up on the request (its caller was cancelled while deliver() hung):
    # the id is recorded, so the retry is a duplicate, and the answer is owed to it.
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE)
        channel.platform.stall()
        with trio.fail_after(10):  # hang guard only
            async with trio.open_nursery() as nursery:
                nursery.start_soon(functools.partial(channel.say, "/clear", message_id="c1"))
                await channel.platform.wait_attempted(1)
                nursery.cancel_scope.cancel()
        channel.platform.release()
        assert direct(channel) == []
        assert await channel.say("/clear", message_id="c1") == "duplicate"
        assert direct(channel) == [("Cleared. Your next message starts a new session.",
                                    "clear")]


def test_owed_answers_keep_at_most_their_cap_dropping_the_oldest(caplog) -> None:
    owed = OwedAnswers(cap=2)
    for n in range(3):
        owed.owe("ops:chat:c1", f"m{n}", f"answer {n}", "cancel")
    assert len(owed) == 2
    assert owed.take("ops:chat:c1", "m0") is None
    assert any("event=owed_answer_dropped" in r.getMessage() and "m0" in r.getMessage()
               for r in caplog.records)
    assert owed.take("ops:chat:c1", "m2") == Owed("answer 2", "cancel")  # and forgotten:
    assert owed.take("ops:chat:c1", "m2") is None
    assert len(owed) == 1
    by_default = OwedAnswers()  # the documented cap
    for n in range(MAX_OWED_ANSWERS + 1):
        by_default.owe("ops:chat:c1", f"m{n}", "Nothing to cancel.", "cancel")
    assert len(by_default) == MAX_OWED_ANSWERS


@pytest.mark.parametrize(("text", "answer"), [
    ("/cancel", "Nothing to cancel."),
    ("/resume sess_nope", "This conversation has no such session."),
])
async def test_a_direct_answer_does_not_wait_for_the_lock_another_message_holds(
        db_path, workspace, text, answer) -> None:
    # The id is written under the conversation's lock, the answer owed on its record with it
    # (there is no session to hold it in); another message of the conversation takes the
    # lock next (here the test does). The answer goes out direct, as it was recorded, and
    # does not wait for that lock to look a session up (one that message may make would not
    # be the command's): the platform giving up on the request then takes nothing from it.
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE)
        conversation = channel.conversation_for(Inbound(chat_id="c1", sender_id="u1",
                                                        text=""))
        holding, let_go = trio.Event(), trio.Event()

        async def hold_the_lock() -> None:
            async with channel.directory.lock(conversation):
                holding.set()
                await let_go.wait()

        with trio.fail_after(10):  # hang guard only
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                writer = rt.supervisor.mailbox("writer")
                before = writer.depth
                nursery.start_soon(functools.partial(channel.say, text, message_id="c1"))
                await until(lambda: writer.depth > before)  # its id's write, under the lock
                nursery.start_soon(hold_the_lock)
                await trio.testing.wait_all_tasks_blocked()  # (waiting for the lock)
                gate.release()
                await holding.wait()  # the id is written; the command let the lock go
                await channel.wait_for(lambda: direct(channel) != [])
                nursery.cancel_scope.cancel()
            assert direct(channel) == [(answer, text.split()[0][1:])]
            assert await rt.client_message_outcome("ops", conversation.key, "c1") is not None
            assert await channel.say(text, message_id="c1") == "duplicate"
        assert direct(channel) == [(answer, text.split()[0][1:])]


CLEARED = "Cleared. Your next message starts a new session."


async def test_an_owed_answer_goes_out_before_the_conversations_next_message(
        db_path, workspace) -> None:
    # The user speaks again before the platform retries: the answer to the earlier command
    # goes out first, not after the reply to the later message (where "your next message
    # starts a new session" came after that next message's session had started).
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 1
        with pytest.raises(PlatformDown):
            await channel.say("/clear", message_id="c1")
        assert await channel.say("hello", message_id="m1") == "started"
        assert direct(channel) == [(CLEARED, "clear")]
        with trio.fail_after(10):  # hang guard only
            await channel.wait_for(lambda: "hello" in channel.messages())
        assert channel.texts()[:2] == [CLEARED, "hello"]
        assert await channel.say("/clear", message_id="c1") == "duplicate"
        assert direct(channel) == [(CLEARED, "clear")]  # once


async def test_an_owed_answer_that_fails_again_does_not_stop_the_next_message(
        db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 2
        with pytest.raises(PlatformDown):
            await channel.say("/clear", message_id="c1")
        assert await channel.say("hello", message_id="m1") == "started"  # handled all the same
        assert direct(channel) == []
        assert await channel.say("/clear", message_id="c1") == "duplicate"  # still owed
        assert direct(channel) == [(CLEARED, "clear")]


async def test_an_owed_answer_goes_out_before_a_later_cancels_answer(db_path,
                                                                      workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 1
        with pytest.raises(PlatformDown):
            await channel.say("/clear", message_id="c1")
        assert await channel.say("/cancel", message_id="c2") == "command"
        assert direct(channel) == [(CLEARED, "clear"), ("Nothing to cancel.", "cancel")]


async def test_a_cancel_cut_off_while_it_pays_an_earlier_answer_still_owes_its_own(
        db_path, workspace) -> None:
    # /cancel (its id recorded) pays the answers owed before it, then gives its own. The
    # platform gave up on its request while the earlier one was being sent: its retry, a
    # duplicate, must still get the /cancel's answer, not nothing until a restart.
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = FailingOnce(rt, DEDUPE)
        channel.failures = 1
        with pytest.raises(PlatformDown):
            await channel.say("/clear", message_id="c1")
        channel.platform.stall()
        with trio.fail_after(10):  # hang guard only
            async with trio.open_nursery() as nursery:
                nursery.start_soon(functools.partial(channel.say, "/cancel", message_id="c2"))
                await channel.platform.wait_attempted(1)  # the earlier answer, stalled
                nursery.cancel_scope.cancel()
            channel.platform.release()
            assert direct(channel) == []
            assert await channel.say("/cancel", message_id="c2") == "duplicate"
        assert direct(channel) == [(CLEARED, "clear"), ("Nothing to cancel.", "cancel")]
