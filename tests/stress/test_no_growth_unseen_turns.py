"""A channel's memory of the turns whose agent never ran does not grow with the turns a
conversation cancels.

A turn cancelled while it opens (``/cancel`` or a steer before its agent runs) is remembered
as unseen, so that a session's first prompt still carries the channel's instructions when its
first turns never reached the agent. Once the session is known to have a turn the agent saw
(turns are never deleted), those ids can change no answer. They were kept until the agent ran
again: a chat that cancels each request before the agent starts (a stop button pressed at
once, every time) grew the set by one turn id per message, and each turn's first-prompt read
fetched that many rows more.
"""

from __future__ import annotations

import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.testing import MemoryChannel, writer_gate

from ..until import until


class _Agent:
    """Answers every turn at once; counts the turns it saw."""

    def __init__(self) -> None:
        self.runs = 0

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        self.runs += 1
        await turn.send_chunk("ok")


async def _cancel_while_opening(channel: MemoryChannel, rt: tidings.Runtime, n: int) -> None:
    """A message whose turn's begin waits behind the writer gate, and ``/cancel`` for it: the
    agent never runs for it."""
    async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
        nursery.start_soon(channel.say, f"request {n}")
        started = len([e for e in channel.events if e.type == "started"])
        await channel.wait_for(
            lambda: len([e for e in channel.events if e.type == "started"]) > started)
        queued = rt.supervisor.mailbox("writer")
        before = queued.depth
        nursery.start_soon(channel.say, "/cancel")
        await until(lambda: queued.depth >= before + 2)  # its writes wait behind the gate
        gate.release()
    await channel.wait_idle()


async def test_turns_cancelled_before_the_agent_are_not_kept_per_turn(rt) -> None:
    agent = _Agent()
    channel = MemoryChannel(rt, ChannelConfig("ops"), agent)
    excluded: list[int] = []  # how many unseen turns each first-prompt read was given
    has_turns = rt.session_has_turns

    async def recording(session_id, *, excluding=()):  # type: ignore[no-untyped-def]
        excluding = list(excluding)
        excluded.append(len(excluding))
        return await has_turns(session_id, excluding=excluding)

    rt.session_has_turns = recording
    with trio.fail_after(60):  # a hang guard, not a wait
        await channel.say("hello")  # answered: the session has a turn its agent saw
        await channel.wait_idle()
        for n in range(30):
            await _cancel_while_opening(channel, rt, n)
    assert agent.runs == 1  # no cancelled request reached the agent
    assert len(excluded) == 31
    # Bounded whatever the number of cycles (it was 0, 1, 2, ... 29: one id per cycle).
    assert max(excluded) <= 1, excluded
    # Still not a first prompt: the next request the agent sees carries no instructions.
    with trio.fail_after(10):
        await channel.say("again")
        await channel.wait_idle()
    assert agent.runs == 2
