"""Dispatch modes and session keys: followup FIFO, collect merges, sessions by chat or sender."""

from __future__ import annotations

from tidings.channels import ChannelConfig, EchoAgent

from .conftest import GatedAgent, RecordingChannel, rows


async def test_followup_runs_each_message_as_its_own_turn_in_order(rt) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                               agent=agent)
    assert await channel.say("one", message_id="1") == "started"
    await agent.wait_turns(1)
    assert [await channel.say(word, message_id=str(n))
            for n, word in ((2, "two"), (3, "three"))] == ["queued", "queued"]
    for n in (2, 3, 4):
        agent.release()
        if n < 4:
            await agent.wait_turns(n)
    await channel.wait_idle()
    assert [turn.text for turn in agent.turns] == ["one", "two", "three"]
    assert agent.max_running == 1
    assert [(e.type, e.message_id) for e in channel.events if e.terminal] == [
        ("completed", "1"), ("completed", "2"), ("completed", "3")]
    await channel.wait_for(lambda: len(channel.messages()) == 3)
    assert channel.messages() == ["working"] * 3


async def test_collect_buffers_messages_during_a_turn_and_sends_them_as_one(rt) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="collect"),
                               agent=agent)
    await channel.say("first", message_id="1")
    await agent.wait_turns(1)
    assert await channel.say("second", message_id="2") == "queued"
    assert await channel.say("third", message_id="3") == "merged"
    agent.release()
    await agent.wait_turns(2)
    agent.release()
    await channel.wait_idle()
    assert [turn.text for turn in agent.turns] == ["first", "second\n\nthird"]
    assert agent.turns[1].message_id == "3"
    assert [e.type for e in channel.events if e.terminal] == ["completed", "completed"]
    history = await rt.history(agent.turns[1].session_id)
    assert [(m.role, m.text) for m in history if m.role == "user"] == [
        ("user", "first"), ("user", "second"), ("user", "third")]


async def test_a_message_to_an_idle_session_starts_at_once_in_every_mode(rt) -> None:
    for mode in ("steer", "followup", "collect"):
        channel = RecordingChannel(rt, ChannelConfig(name=f"ch_{mode}", dispatch_mode=mode))
        assert await channel.say("hello") == "started"
        await channel.wait_idle()
        assert await channel.say("again") == "started"
        await channel.wait_idle()


async def test_chat_scope_shares_a_session_per_chat_and_thread(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=EchoAgent())
    for chat, sender, thread in (("c1", "u1", None), ("c1", "u2", None), ("c1", "u1", "t9"),
                                 ("c2", "u1", None)):
        await channel.say("hi", chat_id=chat, sender_id=sender, thread_id=thread)
        await channel.wait_idle()
    sessions = [e.session_id for e in channel.events if e.type == "started"]
    assert sessions[0] == sessions[1]  # two senders, one chat
    assert len(set(sessions)) == 3
    keys = {key for (key,) in rows_of(rt)}
    assert keys == {"ops:chat:c1", "ops:chat:c1:thread:t9", "ops:chat:c2"}
    assert channel.conversation_of(sessions[2]).thread_id == "t9"


async def test_sender_scope_gives_each_sender_their_own_session(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops", session_scope="sender"))
    await channel.say("hi", sender_id="alice")
    await channel.say("hi", sender_id="bob")
    await channel.wait_idle()
    started = [e.session_id for e in channel.events if e.type == "started"]
    assert len(set(started)) == 2
    assert {channel.conversation_of(s).sender_id for s in started} == {"alice", "bob"}
    assert {key for (key,) in rows_of(rt)} == {"ops:sender:c1:alice", "ops:sender:c1:bob"}


async def test_sessions_of_different_chats_run_at_the_same_time(rt) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("a", chat_id="c1")
    await channel.say("b", chat_id="c2")
    await agent.wait_turns(2)
    assert agent.max_running == 2
    agent.release()
    await channel.wait_idle()


async def test_replies_reach_the_channel_only_for_its_own_sessions(rt) -> None:
    ops = RecordingChannel(rt, ChannelConfig(name="ops"))
    web = RecordingChannel(rt, ChannelConfig(name="web"))
    await ops.say("to ops")
    await web.say("to web")
    await ops.wait_for(lambda: ops.messages())
    await web.wait_for(lambda: web.messages())
    assert (ops.messages(), web.messages()) == (["to ops"], ["to web"])
    assert {o.channel for o in ops.outbounds} == {"ops"}


def rows_of(rt) -> list[tuple[str]]:
    return rows(rt.store.path, "SELECT conversation_key FROM conversation_bindings")
