"""A channel holds every message it accepts until it is dealt with (see ``rt.hold_inbound``).

Answered, steered away, cancelled, cleared: released while the process runs, so a restart
tells nothing. Commands, refusals and blank messages are never held. (What a crash leaves held
is told at the next start: ``tests/recovery/test_held_inbound.py`` and the SIGKILL test in
``tests/recovery/test_hunt_e2e_kill.py``.)
"""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.channels import AccessPolicy, ChannelConfig

from .conftest import GatedAgent, RecordingChannel, cut_short, rows


def _held(db_path) -> list[tuple[str, str | None]]:
    return rows(db_path, "SELECT notice, message_id FROM inbound_messages ORDER BY rowid")


async def _told_after_restart(db_path, workspace) -> int:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        return rt.scanner.statistics().totals.unanswered


async def test_a_message_is_held_while_its_turn_runs_and_released_when_answered(
        db_path, workspace) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
        assert await channel.say("hello there", message_id="m1") == "started"
        await agent.wait_turns(1)
        [(notice, message_id)] = _held(db_path)
        assert message_id == "m1"
        assert "not answered" in notice
        assert '"hello there"' in notice
        agent.release()
        await channel.wait_idle()
        assert _held(db_path) == []
    assert await _told_after_restart(db_path, workspace) == 0


@pytest.mark.parametrize("mode", ["followup", "collect", "steer"])
async def test_a_burst_answered_at_once_leaves_nothing_held(db_path, workspace, mode) -> None:
    """The turn starts before its message's hold is durable; its end (which releases the
    hold) must still be written after it, or the hold would outlive the answer."""
    agent = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode=mode),
                                   agent=agent)
        async with trio.open_nursery() as nursery:
            for n in range(20):
                nursery.start_soon(channel.say, f"message {n}")
        await channel.wait_idle()
        assert agent.turns
        assert _held(db_path) == []
    assert await _told_after_restart(db_path, workspace) == 0


@pytest.mark.parametrize("how", ["steer", "cancel", "clear"])
async def test_messages_dealt_with_on_purpose_are_released(db_path, workspace, how) -> None:
    agent = GatedAgent()
    mode = "steer" if how == "steer" else "followup"
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode=mode),
                                   agent=agent)
        assert await channel.say("first") == "started"
        await agent.wait_turns(1)
        if how == "steer":
            assert await channel.say("instead") == "queued"
            await agent.wait_turns(2)
            agent.release()
        else:
            assert await channel.say("waiting") == "queued"
            assert await channel.say(f"/{how}") == "command"
            if how == "cancel":
                await agent.wait_turns(2)  # the waiting message runs next
                agent.release()
        await channel.wait_idle()
        assert _held(db_path) == []
    assert await _told_after_restart(db_path, workspace) == 0


async def test_commands_refusals_and_blank_messages_are_never_held(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(
            name="ops", access=AccessPolicy.allow("u1")))
        assert await channel.say("/status") == "command"
        assert await channel.say("   ") == "ignored"
        assert await channel.say("hi", sender_id="stranger") == "refused"
        assert _held(db_path) == []


@pytest.mark.parametrize("first", ["hello again", "/status"])
async def test_after_a_restart_the_conversation_gets_its_notice_before_anything_newer(
        db_path, workspace, first) -> None:
    """A channel (not the gateway) is bound to a session only when its conversation speaks:
    after a restart, recovery's "not answered" notice finds no route (``unrouted``). The
    conversation's first message or command hands it back, and it arrives first."""
    await cut_short(db_path, workspace)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 1
        channel = RecordingChannel(rt, ChannelConfig(name="ops"),
                                   agent=GatedAgent(block=False))
        with trio.fail_after(10):  # real time: a notice never handed back must not hang
            await channel.say(first)
            [told, after] = await channel.wait_outbounds(2)
            await channel.wait_idle()
    assert told.kind == "notice"
    assert '"cut short"' in told.text
    assert after.seq > told.seq
    assert [o.text for o in channel.outbounds].count(told.text) == 1
