"""Memory of a long-lived channel: a session the conversation has left (``/new``, ``/clear``)
is unbound and forgotten once nothing of it is in flight, so ``tidings serve`` does not keep
one route binding and directory entry per session it ever served; what such a session still
gets later reaches the chat when the conversation next speaks, and ``/resume`` binds it again."""

from __future__ import annotations

from tidings.channels import ChannelConfig, Inbound

from .conftest import GatedAgent, RecordingChannel
from .test_first_prompt_races import cancel_while_opening

CYCLES = 20


async def _cycle(channel: RecordingChannel, n: int) -> None:
    """One session's full life: a message answered, then ``/new`` moves the conversation on."""
    await channel.say(f"hi {n}")
    await channel.wait_idle()
    await channel.wait_for(lambda: len(channel.messages()) == n + 1)
    await channel.say("/new")
    await channel.wait_for(lambda: len(channel.notices()) == n + 1)


async def test_sessions_left_by_new_do_not_stay_bound(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    for n in range(CYCLES):
        await _cycle(channel, n)
    # Done sessions are dropped: what is left is the current session and at most the one
    # /new just left (its answer may still be in flight), not one entry per done session.
    assert len(rt.router) <= 2
    assert len(channel.directory.sessions()) <= 2
    assert channel.messages() == [f"hi {n}" for n in range(CYCLES)]


async def test_a_row_for_a_forgotten_session_reaches_the_chat_when_it_next_speaks(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await _cycle(channel, 0)
    old = channel.events[0].session_id
    await _cycle(channel, 1)
    assert rt.router.binding(old) is None  # forgotten
    handle = await rt.notify(old, "late news")  # a host still writes in the old session
    assert await handle.wait() == "unrouted"
    await channel.say("again")
    await channel.wait_for(lambda: "late news" in channel.notices())
    await channel.wait_for(lambda: "again" in channel.messages())
    texts = channel.texts()
    assert texts.index("late news") < texts.index("again")  # handed back before anything newer


async def test_resume_binds_a_forgotten_session_again(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await _cycle(channel, 0)
    old = channel.events[0].session_id
    await _cycle(channel, 1)
    assert rt.router.binding(old) is None
    await channel.say(f"/resume {old}")
    await channel.wait_for(lambda: f"Resumed session {old}." in channel.notices())
    await channel.say("back")
    await channel.wait_for(lambda: "back" in channel.messages())
    assert channel.outbounds[-1].session_id == old
    assert rt.router.binding(old).route is channel


async def test_a_session_whose_turn_still_runs_stays_bound(rt) -> None:
    agent = GatedAgent("working")
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("slow")
    await agent.wait_turns(1)
    old = agent.turns[0].session_id
    for n in range(3):
        await channel.say("/new")
        await channel.wait_for(lambda n=n: len(channel.notices()) == n + 1)
    assert rt.router.binding(old).route is channel  # its turn still runs there
    agent.release()
    await channel.wait_idle()
    await channel.wait_for(lambda: any(o.session_id == old and o.kind == "message"
                                       and o.text == "working" for o in channel.outbounds))


async def test_each_conversation_keeps_its_current_session_bound(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    for n in range(5):
        for chat in ("c1", "c2"):
            await channel.say(f"hi {n}", chat_id=chat)
            await channel.wait_idle()
            await channel.say("/new", chat_id=chat)
    await channel.wait_for(lambda: len(channel.notices()) == 10)
    # Per conversation: its current session, and at most the one /new just left.
    assert len(rt.router) <= 4
    current = {chat: await channel.directory.lookup(channel.conversation_for(
        _inbound(chat))) for chat in ("c1", "c2")}
    for session_id in current.values():
        assert rt.router.binding(session_id).route is channel
    await channel.say("still here", chat_id="c2")
    await channel.wait_for(lambda: "still here" in channel.messages())
    assert channel.outbounds[-1].session_id == current["c2"]


def _inbound(chat: str) -> Inbound:
    return Inbound(chat_id=chat, sender_id="u1", text="x")


async def test_unseen_turns_of_sessions_left_behind_are_dropped(rt) -> None:
    """A turn cancelled while it opened is remembered as unseen while its session is idle
    (for the session's next first prompt); a session the conversation left, and the channel
    forgot, keeps no such entry."""
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=GatedAgent(block=False))
    await channel.say("/new")
    await channel.wait_for(lambda: len(channel.notices()) == 1)
    for n in range(CYCLES):
        await cancel_while_opening(channel, rt, "/cancel")
        await channel.wait_idle()
        await channel.say("/new")  # (not /clear: the next resolve would wait behind the gate)
        await channel.wait_for(lambda n=n: len(channel.notices()) == 2 * n + 3)
    assert len(channel.dispatch._unseen_turns) <= 2
