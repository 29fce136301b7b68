"""A channel keeps at most ``idle_conversations`` idle conversations bound; the others are
evicted (their directory entries, route bindings and hand-back marks dropped) and resolved
again from the store when something of theirs comes: the conversation's next message, or a
row the host writes in its current session, which its lane finds a route for through the
router's resolver (delivered at once, not at the user's next message)."""

from __future__ import annotations

import trio

from tidings.channels import ChannelConfig
from tidings.channels._directory import Conversation
from tidings.testing import MemoryChannel

CHATS = 8


class SmallChannel(MemoryChannel):
    idle_conversations = 2


async def _serve(channel: MemoryChannel, chats: int = CHATS) -> dict[str, str]:
    """Each chat says one message, answered; returns chat -> its session."""
    for n in range(chats):
        await channel.say(f"hi {n}", chat_id=f"c{n}")
        await channel.wait_for(lambda n=n: f"hi {n}" in channel.texts("message"))
    await channel.wait_idle()
    await trio.sleep(60)  # every reply recorded, idle lanes retired
    return {f"c{n}": _session_of(channel, f"hi {n}") for n in range(chats)}


def _session_of(channel: MemoryChannel, text: str) -> str:
    [session_id] = {o.session_id for o in channel.outbounds if o.text == text}
    assert session_id is not None
    return session_id


async def test_idle_conversations_beyond_the_cap_are_not_kept(rt, autojump_clock) -> None:
    channel = SmallChannel(rt, ChannelConfig(name="ops"))
    await _serve(channel)
    assert len(rt.router) <= 2
    assert len(channel.directory.sessions()) <= 2


async def test_a_host_notice_to_an_evicted_conversation_goes_out_at_once(
        rt, autojump_clock) -> None:
    channel = SmallChannel(rt, ChannelConfig(name="ops"))
    sessions = await _serve(channel)
    assert rt.router.binding(sessions["c0"]) is None  # evicted
    handle = await rt.notify(sessions["c0"], "reminder")
    with trio.fail_after(60):
        assert await handle.wait() == "delivered"
    [sent] = [o for o in channel.outbounds if o.text == "reminder"]
    assert channel.conversation_of(sent.session_id).chat_id == "c0"
    async with rt.open_turn(sessions["c1"]) as ctx:  # a host's own turn in another one
        reply = await ctx.output.send_text("your reminder")
    with trio.fail_after(60):
        assert await reply.wait() == "delivered"
    assert channel.conversation_of(sessions["c1"]).chat_id == "c1"


async def test_commands_and_messages_work_after_eviction(rt, autojump_clock) -> None:
    channel = SmallChannel(rt, ChannelConfig(name="ops"))
    sessions = await _serve(channel)
    await channel.say("again", chat_id="c0")
    await channel.wait_for(lambda: "again" in channel.texts("message"))
    assert _session_of(channel, "again") == sessions["c0"]  # the same session
    await channel.say("/new", chat_id="c1")
    await channel.wait_for(lambda: "Started a new session." in channel.texts("notice"))
    await channel.say(f"/resume {sessions['c1']}", chat_id="c1")
    await channel.wait_for(lambda: f"Resumed session {sessions['c1']}." in channel.texts("notice"))
    await channel.say("/clear", chat_id="c2")
    await channel.say("after clear", chat_id="c2")
    await channel.wait_for(lambda: "after clear" in channel.texts("message"))
    assert _session_of(channel, "after clear") != sessions["c2"]
    await channel.wait_idle()
    await trio.sleep(60)
    assert len(rt.router) <= 2 + 1  # (the session /clear left may still be settling)


async def test_a_left_session_of_an_evicted_conversation_is_not_resolved(
        rt, autojump_clock) -> None:
    """Only a conversation's current session is resolved: a row in one it left stays
    ``unrouted`` and is handed back when the conversation next speaks, as before."""
    channel = SmallChannel(rt, ChannelConfig(name="ops"))
    await channel.say("first", chat_id="c0")
    await channel.wait_for(lambda: "first" in channel.texts("message"))
    old = _session_of(channel, "first")
    await channel.say("/new", chat_id="c0")
    await _serve(channel)
    handle = await rt.notify(old, "late news")
    with trio.fail_after(60):
        assert await handle.wait() == "unrouted"
    await channel.say("back", chat_id="c0")
    await channel.wait_for(lambda: "back" in channel.texts("message"))
    texts = channel.texts()
    assert texts.index("late news") < texts.index("back")


async def test_a_resolved_row_does_not_overtake_rows_left_unrouted(rt, autojump_clock) -> None:
    """A channel reloaded (closed, a new one of its name opened): what went ``unrouted``
    meanwhile is handed back when the conversation next speaks, and a host notice written
    before then waits behind it (``unrouted`` too), not delivered first."""
    first = SmallChannel(rt, ChannelConfig(name="ops"))
    sessions = await _serve(first, chats=1)
    first.close()
    missed = await rt.notify(sessions["c0"], "while reloading")
    with trio.fail_after(60):
        assert await missed.wait() == "unrouted"
    second = SmallChannel(rt, ChannelConfig(name="ops"))
    later = await rt.notify(sessions["c0"], "reminder")
    with trio.fail_after(60):
        assert await later.wait() == "unrouted"
    await second.say("back", chat_id="c0")
    await second.wait_for(lambda: "back" in second.texts("message"))
    assert second.texts() == ["while reloading", "reminder", "back"]
    fresh = await rt.notify(sessions["c0"], "after")  # nothing left behind: resolved at once
    with trio.fail_after(60):
        assert await fresh.wait() == "delivered"


class _OwnKeys(SmallChannel):
    """An adapter that keys its conversations itself, and keeps more in them than the key."""

    def conversation_for(self, inbound):  # type: ignore[no-untyped-def]
        conversation = super().conversation_for(inbound)
        return Conversation(conversation.key, conversation.chat_id,
                            thread_id=conversation.thread_id, sender_id=inbound.sender_id)


async def test_an_adapter_with_its_own_conversations_keeps_them(rt, autojump_clock) -> None:
    """Its conversations are not evicted (their key would not give them back whole), and a
    session it never held is not resolved from its key (``conversation_of`` would lack what
    its ``conversation_for`` keeps): its rows wait for the conversation's next message."""
    channel = _OwnKeys(rt, ChannelConfig(name="ops"))
    sessions = await _serve(channel, chats=4)
    assert len(rt.router) == 4
    assert channel.conversation_of(sessions["c0"]).sender_id == "user"
    channel.close()
    reloaded = _OwnKeys(rt, ChannelConfig(name="ops"))
    handle = await rt.notify(sessions["c0"], "reminder")
    with trio.fail_after(60):
        assert await handle.wait() == "unrouted"
    await reloaded.say("back", chat_id="c0")
    await reloaded.wait_for(lambda: "back" in reloaded.texts("message"))
    assert reloaded.texts() == ["reminder", "back"]
    assert reloaded.conversation_of(sessions["c0"]).sender_id == "user"
