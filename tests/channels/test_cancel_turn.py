"""``ChannelBase.cancel_turn``: a platform's stop button does what ``/cancel`` does (same
access check, same reason and lifecycle, one request a call, a waiting one when the running
one is already ending), without faking a text message and without an answer in the chat."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.channels import AccessPolicy, ChannelConfig
from tidings.errors import RuntimeClosedError, ValidationError

from ..real_time import fail_after_real
from .conftest import GatedAgent, RecordingChannel, cut_short, rows


def cancels(channel: RecordingChannel) -> list[str]:
    return [event.reason for event in channel.events if event.type == "cancelled"]


async def test_the_stop_button_cancels_the_running_turn(rt, db_path, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        agent = GatedAgent("working")
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                   agent=agent)
        assert await channel.say("first") == "started"
        assert await channel.say("second") == "queued"
        await agent.wait_turns(1)
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1") == "cancelled"
        with trio.fail_after(30):
            await agent.wait_turns(2)
        assert cancels(channel) == ["cancel_command"]
        assert [turn.text for turn in agent.turns] == ["first", "second"]  # one a call
        agent.release()
        await channel.wait_idle()
        assert channel.notices() == []  # the adapter shows the outcome; nothing in the chat
        assert rows(db_path, "SELECT status, reason FROM turns ORDER BY started_at") == [
            ("cancelled", "cancel_command"), ("completed", None)]


async def test_nothing_to_cancel(rt, db_path, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = RecordingChannel(rt, ChannelConfig(name="ops"))
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1") == "nothing"
        assert await channel.say("hi") == "started"
        await channel.wait_idle()
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1") == "nothing"
        assert channel.texts() == ["hi"]
        assert rows(db_path, "SELECT count(*) FROM sessions") == [(1,)]


async def test_a_refused_sender_cancels_nothing(rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        agent = GatedAgent("working")
        channel = RecordingChannel(rt, ChannelConfig(name="ops", access=["u1"]), agent=agent)
        assert await channel.say("first") == "started"
        await agent.wait_turns(1)
        assert await channel.cancel_turn(chat_id="c1", sender_id="u2") == "refused"
        agent.release()
        await channel.wait_idle()
        assert cancels(channel) == []
        assert channel.messages() == ["working"]


async def test_only_its_own_conversation(rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        agent = GatedAgent("working")
        channel = RecordingChannel(rt, ChannelConfig(name="ops", session_scope="sender"),
                                   agent=agent)
        assert await channel.say("first") == "started"
        await agent.wait_turns(1)
        assert await channel.cancel_turn(chat_id="c1", sender_id="u2") == "nothing"
        assert await channel.cancel_turn(chat_id="c2", sender_id="u1") == "nothing"
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1", thread_id="t9") \
            == "cancelled"  # the sender scope shares threads, as handle_inbound does
        await channel.wait_idle()
        assert cancels(channel) == ["cancel_command"]


@pytest.mark.parametrize(("ids", "field"), [
    ({"chat_id": "", "sender_id": "u1"}, "chat_id"),
    ({"chat_id": "c1", "sender_id": None}, "sender_id"),
    ({"chat_id": "c1", "sender_id": "u1", "thread_id": True}, "thread_id"),
    ({"chat_id": "c1", "sender_id": "u1", "press_id": True}, "press_id"),
    ({"chat_id": "c1", "sender_id": "u1", "press_id": "p" * 1100}, "press_id"),
])
async def test_bad_ids_are_refused_by_name(rt, ids, field) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        channel = RecordingChannel(rt, ChannelConfig(name="ops"))
        with pytest.raises(ValidationError) as caught:
            await channel.cancel_turn(**ids)
        assert caught.value.field == field


async def test_a_closed_channel_refuses(rt, autojump_clock) -> None:
    with fail_after_real(30):  # a guard against hanging, not a wait
        agent = GatedAgent("working")
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
        assert await channel.say("first") == "started"
        await agent.wait_turns(1)
        channel.close()
        with pytest.raises(RuntimeClosedError):
            await channel.cancel_turn(chat_id="c1", sender_id="u1")
        agent.release()
        with trio.fail_after(30):
            await channel.wait_idle()
        assert cancels(channel) == []


async def test_a_press_after_a_restart_hands_the_held_rows_back_first(db_path,
                                                                       workspace) -> None:
    """The stop button is the conversation speaking, as any message or ``/cancel`` is: the
    "not answered" notice recovery left ``unrouted`` goes out then, not at the next message."""
    await cut_short(db_path, workspace)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 1
        channel = RecordingChannel(rt, ChannelConfig(name="ops"))
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1") == "nothing"
        session_id = await rt.conversation_session("ops", "ops:chat:c1")
        assert rt.router.binding(session_id) is not None  # bound by the hand-back
        with trio.fail_after(10):  # real time: a notice never handed back must not hang
            [told] = await channel.wait_outbounds(1)
    assert told.kind == "notice"
    assert '"cut short"' in told.text


async def test_a_refused_press_after_a_restart_hands_nothing_back(db_path, workspace) -> None:
    """As for a refused sender's message: the access policy comes first."""
    config = ChannelConfig("ops", access=AccessPolicy.allow("u1"))
    await cut_short(db_path, workspace, config)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, config)
        assert await channel.cancel_turn(chat_id="c1", sender_id="u2") == "refused"
        session_id = await rt.conversation_session("ops", "ops:chat:c1")
        assert session_id is not None
        assert rt.router.binding(session_id) is None


async def test_a_retried_press_cancels_nothing_more(rt, db_path, autojump_clock) -> None:
    """A platform that delivers a stop-button callback again (its first HTTP answer was lost)
    passes the same ``press_id``: what the first press did is returned, nothing more is
    cancelled. A new press (another id) cancels the next request."""
    with fail_after_real(30):  # a guard against hanging, not a wait
        agent = GatedAgent("working")
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                   agent=agent)
        for text in ("first", "second", "third"):
            await channel.say(text)
        await agent.wait_turns(1)
        press = {"chat_id": "c1", "sender_id": "u1"}
        assert await channel.cancel_turn(**press, press_id="p1") == "cancelled"
        with trio.fail_after(30):
            await agent.wait_turns(2)
        assert await channel.cancel_turn(**press, press_id="p1") == "cancelled"  # the retry
        assert cancels(channel) == ["cancel_command"]
        assert await channel.cancel_turn(**press, press_id=2) == "cancelled"
        with trio.fail_after(30):
            await agent.wait_turns(3)
        agent.release()
        await channel.wait_idle()
        assert [turn.text for turn in agent.turns] == ["first", "second", "third"]
        assert rows(db_path, "SELECT status FROM turns ORDER BY started_at") == [
            ("cancelled",), ("cancelled",), ("completed",)]


async def test_press_ids_are_not_message_ids(rt, autojump_clock) -> None:
    """A press id and a message id that happen to be equal are two things: neither is taken
    for a repeat of the other."""
    with fail_after_real(30):  # a guard against hanging, not a wait
        agent = GatedAgent("working")
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dedupe_message_ids=True),
                                   agent=agent)
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1", press_id="7") \
            == "nothing"
        assert await channel.say("hi", message_id="7") == "started"
        await agent.wait_turns(1)
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1", press_id="8") \
            == "cancelled"
        assert await channel.say("again", message_id="8") == "started"
        await agent.wait_turns(2)
        agent.release()
        await channel.wait_idle()
        assert [turn.text for turn in agent.turns] == ["hi", "again"]
        assert cancels(channel) == ["cancel_command"]


async def test_a_press_id_is_remembered_across_a_restart(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"))
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1", press_id="p1") \
            == "nothing"
    agent = GatedAgent("working")
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
        assert await channel.say("hi") == "started"
        with trio.fail_after(10):  # real time: the store runs in threads
            await agent.wait_turns(1)
        assert await channel.cancel_turn(chat_id="c1", sender_id="u1", press_id="p1") \
            == "nothing"  # the first press's answer, again
        assert cancels(channel) == []
        agent.release()
        with trio.fail_after(10):
            await channel.wait_idle()
