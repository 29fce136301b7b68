"""The answer to ``/new`` or ``/resume`` (a row of the session switched to, in its own lane)
reaches the platform after what the conversation's old session had queued before it (the
last reply, on a slow platform), not before; a stuck old route holds it only for a bound, and
the conversation's next message never waits for it."""

from __future__ import annotations

import math

import trio

from tidings.actors import Outbound
from tidings.channels import ChannelConfig
from tidings.channels._answer_order import SWITCH_ANSWER_WAIT

from ..real_time import fail_after_real
from .conftest import RecordingChannel

NEW_SESSION = "Started a new session."


class SlowReply(RecordingChannel):
    """Its platform takes ``slow`` seconds (trio time) for a delivery whose text is in
    ``slow_texts`` (``hi``)."""

    slow = 10.0
    slow_texts = frozenset({"hi"})

    async def deliver(self, outbound: Outbound) -> None:
        if outbound.text in self.slow_texts:
            await trio.sleep(self.slow)
        await super().deliver(outbound)


async def _reply_on_its_way(channel: SlowReply) -> str:
    assert await channel.say("hi") == "started"
    await channel.wait_for(lambda: "completed" in channel.types())  # the reply is queued
    [session_id] = channel.directory.sessions()
    return session_id


async def test_new_session_comes_after_the_old_sessions_last_reply(rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = SlowReply(rt, ChannelConfig(name="ops"))
        await _reply_on_its_way(channel)
        before = trio.current_time()
        assert await channel.say("/new") == "command"
        assert trio.current_time() == before  # the command did not wait for the old reply
        with trio.fail_after(60):
            await channel.wait_for(lambda: len(channel.outbounds) >= 2)
        assert channel.texts() == ["hi", NEW_SESSION]


async def test_a_message_after_new_is_answered_after_the_new_session_answer(
        rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = SlowReply(rt, ChannelConfig(name="ops"))
        await _reply_on_its_way(channel)
        assert await channel.say("/new") == "command"
        before = trio.current_time()
        assert await channel.say("again") == "started"
        assert trio.current_time() == before  # its input path is not held
        with trio.fail_after(60):
            await channel.wait_for(lambda: len(channel.outbounds) >= 3)
        assert channel.texts() == ["hi", NEW_SESSION, "again"]


async def test_resume_comes_after_the_left_sessions_last_reply(rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = SlowReply(rt, ChannelConfig(name="ops"))
        channel.slow = 0
        first = await _reply_on_its_way(channel)
        await channel.wait_for(lambda: channel.texts() == ["hi"])
        assert await channel.say("/new") == "command"
        channel.slow = 10.0
        assert await channel.say("hi") == "started"  # in the new session
        await channel.wait_for(lambda: channel.types().count("completed") == 2)
        assert await channel.say(f"/resume {first}") == "command"
        with trio.fail_after(60):
            await channel.wait_for(lambda: len(channel.outbounds) >= 4)
        assert channel.texts() == ["hi", NEW_SESSION, "hi", f"Resumed session {first}."]


async def test_a_stuck_old_route_holds_the_answer_only_for_a_bound(rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = SlowReply(rt, ChannelConfig(name="ops"))
        channel.slow = math.inf
        await _reply_on_its_way(channel)
        start = trio.current_time()
        assert await channel.say("/new") == "command"
        with trio.fail_after(SWITCH_ANSWER_WAIT * 2):
            await channel.wait_for(lambda: channel.texts() == [NEW_SESSION])
        assert trio.current_time() - start >= SWITCH_ANSWER_WAIT


async def test_new_with_nothing_on_its_way_is_answered_at_once(rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = SlowReply(rt, ChannelConfig(name="ops"))
        channel.slow = 0
        await _reply_on_its_way(channel)
        await channel.wait_for(lambda: channel.texts() == ["hi"])
        start = trio.current_time()
        assert await channel.say("/new") == "command"
        await channel.wait_for(lambda: channel.texts() == ["hi", NEW_SESSION])
        assert trio.current_time() == start


async def test_resume_of_the_left_session_while_its_reply_waits_holds_no_circle(
        rt, autojump_clock) -> None:
    """/new waits for the old session's reply; /resume of that old session then must not wait
    for the /new answer (which waits for that reply, in the lane /resume would hold)."""
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = SlowReply(rt, ChannelConfig(name="ops"))
        first = await _reply_on_its_way(channel)
        assert await channel.say("/status") == "command"  # queued behind the reply, unclaimed
        start = trio.current_time()
        assert await channel.say("/new") == "command"
        assert await channel.say(f"/resume {first}") == "command"
        with trio.fail_after(60):
            await channel.wait_for(lambda: len(channel.outbounds) >= 4)
        assert trio.current_time() - start < SWITCH_ANSWER_WAIT
        texts = [text.split(",")[0] for text in channel.texts()]
        assert texts.index("hi") < texts.index("Session: active") \
            < texts.index(f"Resumed session {first}.")
        assert texts.index("hi") < texts.index(NEW_SESSION)


async def test_a_runtime_that_stops_while_a_switch_answer_waits(rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = SlowReply(rt, ChannelConfig(name="ops"))
        channel.slow = math.inf
        await _reply_on_its_way(channel)
        assert await channel.say("/new") == "command"
    # the runtime fixture stops now: the held session is released, nothing hangs


class HeldCompletion(SlowReply):
    """Its lifecycle hook holds the ``completed`` event (the reply is written by then) until
    ``gate`` is set."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.reply_written = trio.Event()
        self.gate = trio.Event()

    async def on_task_lifecycle(self, event) -> None:
        super().on_task_lifecycle(event)
        if event.type == "completed":
            self.reply_written.set()
            await self.gate.wait()


async def test_new_while_the_turn_reports_completed_comes_after_its_reply(
        rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = HeldCompletion(rt, ChannelConfig(name="ops"))
        assert await channel.say("hi") == "started"
        await channel.reply_written.wait()
        assert await channel.say("/new") == "command"
        channel.gate.set()
        with trio.fail_after(60):
            await channel.wait_for(lambda: len(channel.outbounds) >= 2)
        assert channel.texts() == ["hi", NEW_SESSION]


async def test_a_second_new_comes_after_the_held_sessions_reply(rt, autojump_clock) -> None:
    """``/new``, a message, ``/new`` again while the first switch's session is held (its
    answer waits for the old reply): the second answer must wait for that session's rows too
    (its answer and the message's reply), not only for what the first switch waits for."""
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = SlowReply(rt, ChannelConfig(name="ops"))
        await _reply_on_its_way(channel)
        assert await channel.say("/new") == "command"
        channel.slow_texts = {"hi", "again"}
        assert await channel.say("again") == "started"  # in the held session
        await channel.wait_for(lambda: channel.types().count("completed") == 2)
        assert await channel.say("/new") == "command"
        with trio.fail_after(60):
            await channel.wait_for(lambda: len(channel.outbounds) >= 4)
        assert channel.texts() == ["hi", NEW_SESSION, "again", NEW_SESSION]
