"""A channel that was closed (``channel.close()``: an adapter shutting down, or reloading and
building a new channel of the same name) takes no more messages. A late one (a webhook still in
flight) was handled all the same: the closed channel bound itself again as the session's route,
taking it from the channel that replaced it, so that one's replies went to the closed adapter
until its own next message. It is refused (nothing accepted, as while the runtime stops), and
one that was already being handled when the channel closed binds nothing: its reply is
``unrouted`` and handed back when the conversation next speaks."""

from __future__ import annotations

import pytest
import trio

from tidings.channels import ChannelConfig
from tidings.errors import RuntimeClosedError
from tidings.testing import writer_gate

from ..until import until
from .conftest import GatedAgent, RecordingChannel


async def test_a_message_to_a_closed_channel_is_refused(rt) -> None:
    first = RecordingChannel(rt, ChannelConfig("ops"))
    await first.say("hi")
    await first.wait_idle()
    session_id = first.events[0].session_id
    first.close()
    second = RecordingChannel(rt, ChannelConfig("ops"))  # the adapter, reloaded
    await second.say("/status")
    assert rt.router.binding(session_id).route is second
    with pytest.raises(RuntimeClosedError, match="closed"):
        await first.say("late")
    assert rt.router.binding(session_id).route is second
    assert [event.type for event in first.events].count("started") == 1


async def test_a_message_in_hand_when_the_channel_closes_binds_nothing(rt) -> None:
    first = RecordingChannel(rt, ChannelConfig("ops"))
    first.platform.stall()
    writer = rt.supervisor.mailbox("writer")
    with trio.fail_after(10):  # a guard against hanging, not a wait
        async with trio.open_nursery() as nursery:
            nursery.start_soon(first.say, "/clear")  # answered directly: its answer stalls
            await first.platform.wait_attempted(1)
            async with writer_gate(rt.store) as gate:
                before = writer.depth
                nursery.start_soon(first.say, "in flight")
                # Being handled: its session's write waits behind the gate, before the bind.
                # (Not "all tasks blocked": that holds while it reads in a worker thread
                # too, and on a busy machine it had bound and started its turn by then.)
                await until(lambda: writer.depth > before)
                first.close()
                gate.release()
            first.platform.release()
    await first.wait_idle()
    session_id = first.events[0].session_id
    assert rt.router.binding(session_id) is None
    second = RecordingChannel(rt, ChannelConfig("ops"))
    await second.say("/status")  # the conversation speaks: its reply is handed back
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await second.wait_for(lambda: "in flight" in second.messages())
    assert "in flight" not in first.messages()


@pytest.mark.parametrize("mode", ["followup", "collect"])
async def test_a_turn_waiting_in_a_closed_channel_is_not_answered_after_a_newer_message(
        rt, mode) -> None:
    """The adapter reloads while a turn runs and a message waits behind it; the reloaded
    channel takes the conversation's next message. The waiting one was answered after that
    newer one (the old channel's worker got in line for the session's turn only once its
    running turn ended, behind the new channel's): history read A, C, B. It is told 'not
    answered' instead, as a turn the runtime's stop dropped, and nothing is reordered."""
    agent = GatedAgent()
    first = RecordingChannel(rt, ChannelConfig("ops", dispatch_mode=mode), agent=agent)
    await first.say("A")
    await agent.wait_turns(1)
    await first.say("B")
    first.close()
    second = RecordingChannel(rt, ChannelConfig("ops", dispatch_mode=mode), agent=agent)
    await second.say("C")
    with trio.fail_after(10):  # a guard against hanging, not a wait
        agent.release()
        await agent.wait_turns(2)
        agent.block = False
        agent.release()
        await first.wait_idle()
        await second.wait_idle()
    assert [turn.text for turn in agent.turns] == ["A", "C"]
    with trio.fail_after(10):
        await second.wait_for(lambda: any("Please send it again" in text
                                          for text in second.notices()))
    session_id = agent.turns[0].session_id
    history = await rt.history(session_id)
    assert [row.text for row in history if row.role == "user"] == ["A", "C"]
    [notice] = [notice for notice in second.notices() if '"B"' in notice]
    # Neither the server nor the chat stopped: it said "the server stopped"
    assert "because this channel was closed and reopened before it got to it" in notice, notice
