"""A session switch (``/new``, ``/resume``) whose caller is cancelled while the rebind is being
written: the rebind may still commit, and the channel must then follow the store, not a stale
cache. The interleaving is forced with the writer gate."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.channels import ChannelConfig, Inbound
from tidings.testing import writer_gate

from ..until import until
from .conftest import GatedAgent, RecordingChannel


@pytest.mark.parametrize("command", ["/new", "/resume"])
async def test_a_session_switch_cancelled_while_it_commits_leaves_no_stale_session(
        rt, command) -> None:
    """The adapter's caller gives up on ``/new`` (or ``/resume``) while its rebind is being
    written; the rebind still commits, and the next message goes where the store says."""
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("hello")
    await channel.wait_idle()
    first = agent.turns[0].session_id
    if command == "/resume":
        await channel.say("/new")
        await channel.say("in the second session")
        await channel.wait_idle()
        command = f"/resume {first}"
    conversation = channel.conversation_for(Inbound(chat_id="c1", sender_id="u1", text="x"))
    before = channel.directory.cached(conversation)
    giving_up = trio.CancelScope()

    async def switch_then_give_up() -> None:
        with giving_up:
            await channel.say(command)

    writer = rt.supervisor.mailbox("writer")
    with trio.fail_after(10):  # a guard against hanging, not a wait
        async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
            depth = writer.depth
            nursery.start_soon(switch_then_give_up)
            # Its rebind waits behind the gate ("all tasks blocked" also holds while the
            # command still reads in a worker thread: cancelled there, nothing was written).
            await until(lambda: writer.depth > depth)
            giving_up.cancel()
            await trio.testing.wait_all_tasks_blocked()
            gate.release()
    await channel.say("after the switch")
    await channel.wait_idle()  # its writes queued behind the switch's: that is durable now
    durable = await rt.conversation_session("ops", conversation.key)
    assert durable != before  # the switch was written, though its caller went away
    assert agent.turns[-1].session_id == durable
