"""A channel that serves the same conversations for months keeps nothing per message, turn,
command or session those conversations went through.

Each cycle runs every conversation through a message answered, a repeated message id, a
steer, a ``/cancel`` of a running turn, a stop-button press, ``/new``, ``/resume`` of the
session left, ``/clear``, a refused sender, commands with no session, a turn cut by the
channel's timeout and twins of one message id handled at once. After it, what the channel and
the runtime hold is per conversation (its current session, and the one a switch just left),
and the live records of the kinds a cycle makes are as many after many more cycles as after a
few.
"""

from __future__ import annotations

import collections
import functools

import trio

from tidings.actors import TurnContext
from tidings.actors._handle import DeliveryItem
from tidings.actors._router import Binding
from tidings.channels import ChannelConfig, Inbound
from tidings.channels._directory import Conversation
from tidings.channels._dispatch import SessionState
from tidings.channels._turn import ActiveTurn
from tidings.testing import MemoryChannel

from .live_records import grown, live_records

CHATS = ("c1", "c2")
_KINDS = (DeliveryItem, TurnContext, Binding, Conversation, SessionState, ActiveTurn,
          trio.CancelScope, trio.Lock, trio.Event)


class _Agent:
    """Answers at once; ``slow`` takes a while (``slower``: past the channel's timeout)."""

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        if "slower" in turn.text:
            await trio.sleep(60)
        elif "slow" in turn.text:
            await trio.sleep(3)
        await turn.send_chunk(f"re: {turn.text}")


async def _cycle(channel: MemoryChannel, chat: str, n: int) -> None:
    def say(text: str, key: str, **ids: str):  # type: ignore[no-untyped-def]
        return channel.say(text, chat_id=chat, message_id=f"{chat}-{n}-{key}", **ids)

    await say("hello", "hello")
    await say("hello", "hello")  # the platform delivers it again: a duplicate
    await say("slow one", "slow")
    await say("steer it", "steer")
    await channel.wait_idle()
    await say("slow two", "slow2")
    await say("/cancel", "cancel")
    await say("slow three", "slow3")
    await channel.cancel_turn(chat_id=chat, sender_id="user", press_id=f"{chat}-{n}-press")
    await channel.wait_idle()
    left = channel.directory.cached(channel.conversation_for(
        Inbound(chat_id=chat, sender_id="user", text="x")))
    await say("/new", "new")
    await say("/who", "who")
    await say(f"/resume {left}", "resume")
    await say("slower", "slower")  # cut by the channel's turn_timeout
    await channel.wait_idle()
    await say("/clear", "clear")
    await say("/status", "status")
    await say("not you", "refused", sender_id="intruder")
    await channel.say("/status", chat_id=f"{chat}-quiet", sender_id="user")
    async with trio.open_nursery() as nursery:  # twins of one id, handled at once
        nursery.start_soon(functools.partial(say, "twin", "twin"))
        nursery.start_soon(functools.partial(say, "twin", "twin"))
    await say("after clear", "after")
    await channel.wait_idle()
    await trio.sleep(60)  # every reply delivered, idle lanes retired


async def test_a_channel_keeps_nothing_per_message_or_session_it_served(
        rt, autojump_clock) -> None:
    channel = MemoryChannel(rt, ChannelConfig(
        "ops", dedupe_message_ids=True, turn_timeout=10, access=["user"]), _Agent())

    async def cycles(first: int, last: int) -> collections.Counter[str]:
        for n in range(first, last):
            for chat in CHATS:
                await _cycle(channel, chat, n)
        channel.outbounds.clear()  # the test double's own record of what it was handed
        channel.events.clear()
        channel.platform.delivered.clear()
        channel.platform.attempted.clear()
        channel.platform.delivered_at.clear()
        return live_records(_KINDS)

    with trio.fail_after(36_000):  # a hang guard (trio's clock jumps), not a wait
        baseline = await cycles(0, 1)
        after_few = await cycles(1, 2)
        after_many = await cycles(2, 6)  # 8 more chat cycles: one record kept each is 8
    # Per conversation: its current session, and at most the one a switch just left.
    assert len(channel.directory.sessions()) <= 2 * len(CHATS)
    assert len(rt.router) <= 2 * len(CHATS)
    stats = rt.statistics().dispatch
    assert (stats.lanes, stats.running, stats.failed) == (0, 0, 0)
    assert grown(baseline, after_few) == {}, (baseline, after_few)
    assert grown(after_few, after_many) == {}, (after_few, after_many)


class _FewIdle(MemoryChannel):
    idle_conversations = 4


async def test_a_channel_keeps_no_idle_conversation_past_its_cap(rt, autojump_clock) -> None:
    """A bot that served many users once each holds at most ``idle_conversations`` of them:
    not their sessions' bindings, directory entries or hand-back marks."""
    channel = _FewIdle(rt, ChannelConfig("ops"), _Agent())

    async def serve(first: int, last: int) -> collections.Counter[str]:
        for n in range(first, last):
            await channel.say("hello", chat_id=f"user-{n}")
        await channel.wait_idle()
        await trio.sleep(60)  # every reply delivered, idle lanes retired
        channel.outbounds.clear()
        channel.events.clear()
        channel.platform.delivered.clear()
        channel.platform.attempted.clear()
        channel.platform.delivered_at.clear()
        return live_records((Binding, Conversation))

    with trio.fail_after(36_000):  # a hang guard (trio's clock jumps), not a wait
        after_few = await serve(0, 10)
        after_many = await serve(10, 60)
    assert len(rt.router) <= 4
    assert len(channel.directory.sessions()) <= 4
    assert len(channel._handed_back) <= 4
    assert grown(after_few, after_many) == {}, (after_few, after_many)
