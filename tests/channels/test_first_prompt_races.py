"""A session's first prompt when its first turn never reached the agent.

A turn can be cancelled after its turn row is written and before its agent runs (a steer or a
``/cancel`` that comes while it opens). The agent never saw that turn's prompt, so the next
prompt it gets must still carry the channel's instructions and boundary note, and must not say
that a previous request was being worked on. Each interleaving is forced with the writer gate,
never with sleeps.
"""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.channels import STEER_NOTE, ChannelConfig, ChannelIdentity, MemoryScope
from tidings.testing import writer_gate

from ..until import until
from .conftest import GatedAgent, RecordingChannel, rows

OPS = ChannelConfig(
    name="ops", instructions="Be brief.",
    identity=ChannelIdentity(id="channel:ops", display_name="Ops Bot"),
    memory_scope=MemoryScope(namespace="team:ops"))

NOTE = """Channel identity:
- id: channel:ops
- display name: Ops Bot

Memory scope:
- namespace: team:ops
- mode: metadata-only
- data from other channels must not be shared."""


def first_prompt(text: str) -> str:
    return f"Be brief.\n\n{NOTE}\n\n{text}"


async def cancel_while_opening(channel: RecordingChannel, rt: tidings.Runtime,
                               late: str) -> None:
    """Send ``first`` and, while its turn's begin waits behind the writer gate, *late*
    (``/cancel``, or ``second``: a steer). The agent never runs for ``first``."""
    async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
        # Not awaited here: ``say`` returns once the message is held, behind the gate too.
        nursery.start_soon(channel.say, "first")
        await channel.wait_events("started")  # the turn is opening; its begin waits
        queued = rt.supervisor.mailbox("writer")
        before = queued.depth
        nursery.start_soon(channel.say, late)
        # Until both of *late*'s writes wait behind the gate too: "all tasks blocked" also
        # held while *late* was still in a worker thread before them, and the gate then
        # opened with none or one of them queued (even unslowed).
        with trio.fail_after(10):  # a guard against hanging, not a wait
            await until(lambda: queued.depth == before + 2)
        gate.release()


async def new_session(channel: RecordingChannel) -> str:
    """``/new``: the session exists, so nothing in the gated part resolves through the store."""
    await channel.say("/new")
    [session_id] = channel.directory.sessions()
    return session_id


async def test_a_steer_while_the_first_turn_opens_keeps_the_instructions(rt, db_path) -> None:
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, OPS, agent=agent)
    session_id = await new_session(channel)
    await cancel_while_opening(channel, rt, "second")
    await channel.wait_idle()
    assert [turn.text for turn in agent.turns] == ["second"]  # "first" never reached it
    assert agent.turns[0].prompt.startswith(f"Be brief.\n\n{NOTE}\n\n")
    assert rows(db_path, "SELECT status, reason FROM turns WHERE session_id = ? "
                         "ORDER BY started_at", session_id) == [
        ("cancelled", "steer"), ("completed", None)]


async def test_no_steer_note_when_the_steered_turn_never_reached_the_agent(rt) -> None:
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, OPS, agent=agent)
    await new_session(channel)
    await cancel_while_opening(channel, rt, "second")
    await channel.wait_idle()
    assert [turn.prompt for turn in agent.turns] == [first_prompt("second")]
    assert STEER_NOTE not in agent.turns[0].prompt


async def test_no_steer_note_and_no_instructions_when_a_later_turn_is_steered_while_it_opens(
        rt) -> None:
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, OPS, agent=agent)
    await new_session(channel)
    await channel.say("hello")
    await channel.wait_idle()
    await cancel_while_opening(channel, rt, "second")
    await channel.wait_idle()
    assert [turn.prompt for turn in agent.turns] == [first_prompt("hello"), "second"]


class HoldingChannel(RecordingChannel):
    """Holds the ``started`` hook of the turn answering ``hold_message`` until ``go`` is set:
    that turn is active but has not opened yet (a steer now cancels it before its agent)."""

    hold_message: str | None = None
    go: trio.Event

    def on_task_lifecycle(self, event):
        super().on_task_lifecycle(event)
        if event.type == "started" and event.message_id == self.hold_message:
            return self.go.wait()
        return None


async def test_a_steer_note_the_unseen_turn_carried_passes_to_the_next(rt) -> None:
    agent = GatedAgent()
    channel = HoldingChannel(rt, OPS, agent=agent)
    channel.hold_message, channel.go = "m2", trio.Event()
    await channel.say("one", message_id="m1")
    await agent.wait_turns(1)
    await channel.say("two", message_id="m2")  # steers "one", whose agent is working
    await channel.wait_events("started")  # "two" is active, held before it opens
    assert await channel.say("three", message_id="m3") == "queued"  # steers "two"
    channel.go.set()
    await agent.wait_turns(2)
    agent.release()
    await channel.wait_idle()
    assert [turn.text for turn in agent.turns] == ["one", "three"]
    assert agent.turns[1].prompt == f"{STEER_NOTE}\n\nthree"  # "one" was cancelled, unsaid
    assert [(e.type, e.message_id) for e in channel.events if e.type != "text_chunk"] == [
        ("started", "m1"), ("cancelled", "m1"), ("started", "m2"), ("cancelled", "m2"),
        ("started", "m3"), ("completed", "m3")]


async def test_a_cancel_while_the_first_turn_opens_keeps_the_instructions_for_the_next(
        rt) -> None:
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, OPS, agent=agent)
    await new_session(channel)
    await cancel_while_opening(channel, rt, "/cancel")
    await channel.wait_idle()  # the session goes idle: its dispatch state is forgotten
    assert agent.turns == []
    await channel.say("next")
    await channel.wait_idle()
    await channel.say("later")
    await channel.wait_idle()
    assert [turn.prompt for turn in agent.turns] == [first_prompt("next"), "later"]


@pytest.mark.parametrize("late", ["/cancel", "second"])
async def test_instructions_come_once_after_the_agent_saw_them_even_across_a_restart(
        db_path, workspace, late) -> None:
    agent = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0.5) as rt:
        channel = RecordingChannel(rt, OPS, agent=agent)
        await new_session(channel)
        await cancel_while_opening(channel, rt, late)
        await channel.wait_idle()
        if late == "/cancel":
            await channel.say("second")
            await channel.wait_idle()
        await channel.say("third")
        await channel.wait_idle()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0.5) as rt:
        channel = RecordingChannel(rt, OPS, agent=agent)
        await channel.say("after")
        await channel.wait_idle()
    assert [turn.prompt for turn in agent.turns] == [first_prompt("second"), "third", "after"]
    assert len({turn.session_id for turn in agent.turns}) == 1


async def test_session_has_turns_leaves_out_the_excluded_turns(rt) -> None:
    session_id = await rt.create_session(channel="ops")
    turn_ids = []
    for _ in range(2):
        async with rt.open_turn(session_id) as ctx:
            turn_ids.append(ctx.turn_id)
    assert await rt.session_has_turns(session_id) is True
    assert await rt.session_has_turns(session_id, excluding=turn_ids[:1]) is True
    assert await rt.session_has_turns(session_id, excluding=turn_ids) is False
    # ids of other sessions' turns (or none at all) exclude nothing here
    assert await rt.session_has_turns(session_id, excluding=[*turn_ids[1:], "turn_x"]) is True
