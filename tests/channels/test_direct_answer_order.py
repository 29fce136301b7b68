"""A command answered with no session (straight to ``deliver()``, e.g. right after ``/clear``)
comes after what the channel queued earlier for that conversation through the outbox: it
waits until those rows end (delivered, failed, unrouted), not for another conversation's."""

from __future__ import annotations

import trio
import trio.testing

from tidings.channels import REFUSAL, ChannelConfig

from .conftest import RecordingChannel

CLEARED = "Cleared. Your next message starts a new session."


async def _cleared_on_a_slow_platform(channel: RecordingChannel) -> None:
    """c1 speaks, its reply is on its way (the platform takes 10 s a message), then /clear:
    its answer waits in the outbox of the cleared session behind the reply."""
    channel.platform.latency = 10
    assert await channel.say("hi") == "started"
    await channel.platform.wait_attempted(1)
    assert await channel.say("/clear") == "command"


async def test_a_direct_answer_after_clear_comes_after_the_clear_answer(
        rt, quick_autojump_clock) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops", access=["u1"]))
    await _cleared_on_a_slow_platform(channel)
    for command in ("/status", "/who", "/help", "/new hello"):  # none has a session now
        assert await channel.say(command) == "command"
    assert await channel.say("me too", sender_id="u2") == "refused"
    texts = channel.texts()
    assert texts[:2] == ["hi", CLEARED]
    assert [text.splitlines()[0] for text in texts[2:]] == [
        "Session: none", "Channel: ops", "Commands:", "Usage: /new", REFUSAL]
    assert [o.session_id for o in channel.outbounds[2:]] == [None] * 5


async def test_a_direct_answer_waits_for_its_own_conversation_only(
        rt, quick_autojump_clock) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await _cleared_on_a_slow_platform(channel)
    assert await channel.say("/status", chat_id="c2") == "command"
    [other] = [o for o in channel.outbounds if o.metadata.get("chat_id") == "c2"]
    assert other.session_id is None
    assert CLEARED not in channel.texts()  # c2 was answered while c1's answer still waited
    await channel.wait_for(lambda: CLEARED in channel.texts())


async def test_a_failed_earlier_answer_does_not_hold_the_next(rt, quick_autojump_clock) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    channel.platform.fail = lambda outbound: outbound.text == CLEARED
    await _cleared_on_a_slow_platform(channel)
    with trio.fail_after(60):
        assert await channel.say("/status") == "command"
    assert channel.texts()[0] == "hi"
    assert channel.texts()[1].startswith("Session: none")
    assert [o.text for o in channel.platform.attempted].index(CLEARED) == 1


async def test_a_waiting_direct_answer_holds_no_other_message(rt, quick_autojump_clock) -> None:
    """A second /clear (no session: answered directly) waits for the first one's answer; the
    conversation's next message does not wait for it as well."""
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    channel.platform.stall()
    assert await channel.say("hi") == "started"
    await channel.platform.wait_attempted(1)
    assert await channel.say("/clear") == "command"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(channel.say, "/clear")
        await trio.testing.wait_all_tasks_blocked()
        with trio.fail_after(30):
            assert await channel.say("again") == "started"
        channel.platform.release()
    await channel.wait_for(lambda: channel.texts().count(CLEARED) == 2)
    assert channel.texts()[:2] == ["hi", CLEARED]
