"""``/clear`` drops the turns still waiting in the conversation: each of them still ends, as a
turn cancelled before it began does (``started``, then ``cancelled`` with reason ``clear``),
after the turn it waited behind, so an adapter (or a gateway client) that waits for the end
of its message's turn is not left waiting for ever. No "not answered" notice: the user asked
for the clear. Their messages never reach the agent nor the history."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.supervisor._testing_invariants import lifecycle_violations

from .conftest import GatedAgent, Lingering, RecordingChannel, rows

CLEARED = "Cleared. Your next message starts a new session."


def ends(channel: RecordingChannel) -> list[tuple[str | None, str, str | None]]:
    """``(message_id, event type, reason)`` of every event but the streamed ones."""
    return [(event.message_id, event.type, getattr(event, "reason", None))
            for event in channel.events if event.type not in ("text_chunk", "tool_call")]


async def test_each_turn_clear_drops_ends_cancelled_clear_after_the_running_one(
        db_path, workspace) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                   agent=agent)
        assert await channel.say("first", message_id="m1") == "started"
        await agent.wait_turns(1)
        assert await channel.say("second", message_id="m2") == "queued"
        assert await channel.say("third", message_id="m3") == "queued"
        assert await channel.say("/clear", message_id="c1") == "command"
        with trio.fail_after(10):
            await channel.wait_idle()
            await channel.wait_for(lambda: CLEARED in channel.notices())
        assert ends(channel) == [
            ("m1", "started", None), ("m1", "cancelled", "clear"),
            ("m2", "started", None), ("m2", "cancelled", "clear"),
            ("m3", "started", None), ("m3", "cancelled", "clear")]
        assert lifecycle_violations(channel.events) == []
        [session_id] = {event.session_id for event in channel.events}
        assert channel.notices() == [CLEARED]  # no "not answered" notice
        # The next message starts a new session, and runs.
        assert await channel.say("again", message_id="m4") == "started"
        await agent.wait_turns(2)
        agent.release()
        await channel.wait_idle()
    assert [turn.text for turn in agent.turns] == ["first", "again"]
    users = rows(db_path, "SELECT text FROM messages WHERE role = 'user' AND session_id = ?",
                 session_id)
    assert users == [("first",)]


@pytest.mark.parametrize("mode", ["collect", "steer"])
async def test_a_merged_waiting_turn_clear_drops_ends_once_with_its_newest_id(
        db_path, workspace, mode, autojump_clock) -> None:
    agent = Lingering()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode=mode),
                                   agent=agent)
        assert await channel.say("first", message_id="m1") == "started"
        await agent.entered.wait()
        assert await channel.say("second", message_id="m2") == "queued"
        assert await channel.say("third", message_id="m3") == "merged"
        assert await channel.say("/clear") == "command"
        with trio.fail_after(10):
            await channel.wait_idle()
        reason = "steer" if mode == "steer" else "clear"
        assert ends(channel) == [
            ("m1", "started", None), ("m1", "cancelled", reason),
            ("m3", "started", None), ("m3", "cancelled", "clear")]
        assert lifecycle_violations(channel.events) == []
    assert agent.texts == ["first"]
