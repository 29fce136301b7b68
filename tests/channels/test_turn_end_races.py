"""Causes that race a turn's end: a cancel or steer that arrives while a failed turn's end is
being written, an agent that fails because it is being cancelled, and a shutdown that meets
an agent whose own nursery fails. Each interleaving is forced with the writer gate or events,
never with sleeps."""

from __future__ import annotations

import functools

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import STEER_NOTE, ChannelConfig
from tidings.testing import writer_gate

from ..until import until
from .conftest import GatedAgent, RecordingChannel, rows


def terminals(channel: RecordingChannel) -> list[str]:
    return [event.type for event in channel.events if event.terminal]


class FailOnSignal:
    """Streams a chunk, then raises once the test says so (later turns just answer)."""

    def __init__(self) -> None:
        self.entered = trio.Event()
        self.fail = trio.Event()
        self.prompts: list[str] = []

    async def run(self, turn) -> None:
        self.prompts.append(turn.prompt)
        if len(self.prompts) > 1:
            await turn.send_chunk("ok")
            return
        await turn.send_chunk("working")
        self.entered.set()
        await self.fail.wait()
        raise RuntimeError("agent broke")


@pytest.mark.parametrize("late", ["/cancel", "steer"])
async def test_a_cancel_that_arrives_while_a_failed_turn_ends_leaves_it_failed(
        rt, db_path, late) -> None:
    agent = FailOnSignal()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("first")
    await agent.entered.wait()
    queued = rt.supervisor.mailbox("writer")
    async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
        ended = queued.depth
        agent.fail.set()  # the agent raises; the turn's end now waits behind the gate
        # Not "all tasks blocked" alone: the end's write could still be on its way, and then
        # counted as the late message's below (or both at once: the depth skipped past).
        with trio.fail_after(10):  # a guard against hanging, not a wait
            await until(lambda: queued.depth > ended)
        await trio.testing.wait_all_tasks_blocked()
        before = queued.depth
        nursery.start_soon(channel.say, "/cancel" if late == "/cancel" else "second")
        # Until the late message's write waits behind the gate too: "all tasks blocked" also
        # held while /cancel was in a worker thread before it, and the gate opened first.
        with trio.fail_after(10):  # a guard against hanging, not a wait
            await until(lambda: queued.depth == before + 1)
        gate.release()
    await channel.wait_idle()
    expected = ["failed"] if late == "/cancel" else ["failed", "completed"]
    assert terminals(channel) == expected
    assert rows(db_path, "SELECT status FROM turns ORDER BY started_at")[0] == ("failed",)
    if late == "/cancel":
        await channel.wait_for(lambda: channel.notices())
        assert channel.notices() == ["Nothing to cancel."]
    else:
        assert STEER_NOTE not in agent.prompts[1]  # nothing was steered away


async def test_shutdown_meets_an_agent_whose_nursery_fails_and_the_turn_is_cancelled(
        db_path, workspace) -> None:
    class Careless:
        async def run(self, turn) -> None:
            async def helper() -> None:
                try:
                    await trio.sleep_forever()
                except trio.Cancelled:
                    raise RuntimeError("helper interrupted") from None

            async with trio.open_nursery() as nursery:
                nursery.start_soon(helper)
                await turn.send_chunk("waiting")
                await trio.sleep_forever()

    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=Careless())
        await channel.say("go")
        await channel.wait_events("text_chunk")
    assert terminals(channel) == ["cancelled"]
    assert [event.reason for event in channel.events if event.type == "cancelled"] == [
        "shutdown"]
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "shutdown")]


@pytest.mark.parametrize("late", ["/cancel", "steer"])
async def test_a_message_whose_turn_is_cancelled_while_it_opens_is_still_in_history(
        rt, late) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("/new")  # the session exists: nothing below resolves through the store
    [session_id] = channel.directory.sessions()
    async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
        # Not awaited here: ``say`` returns once the message is held, behind the gate too.
        nursery.start_soon(channel.say, "first")
        await channel.wait_events("started")  # the turn is opening; its begin waits
        queued = rt.supervisor.mailbox("writer")
        before = queued.depth
        nursery.start_soon(channel.say, "/cancel" if late == "/cancel" else "second")
        with trio.fail_after(10):  # both its writes behind the gate (as above)
            await until(lambda: queued.depth == before + 2)
        gate.release()
    if late == "steer":
        await agent.wait_turns(1)
        agent.release()
    await channel.wait_idle()
    history = await rt.history(session_id, model_context=True)
    users = [m.text for m in history if m.role == "user"]
    assert users == (["first"] if late == "/cancel" else ["first", "second"])


async def test_a_turn_steered_while_it_opens_then_cut_by_the_stop_keeps_the_steer(
        db_path, workspace) -> None:
    """A steer recorded while the turn's begin is being written, then the runtime's stop
    cutting that write: the turn was steered first (first reason wins), in the turns table as
    in its lifecycle; the table said ``shutdown``. The steered message is dealt with (the one
    that steered it waits, and is told it was not answered)."""
    agent = GatedAgent()
    stop_began = trio.Event()
    marks: dict[str, int] = {}
    async with (trio.open_nursery() as outer,
                tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt):
        stop = rt.tasks.stop

        async def stop_and_tell() -> None:
            stop_began.set()  # the gate below opens once the stop has cut the turn
            await stop()

        rt.tasks.stop = stop_and_tell  # type: ignore[method-assign]
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
        await channel.say("/new")  # the session exists: nothing below resolves it
        queued = rt.supervisor.mailbox("writer")
        gated = trio.Event()

        async def hold_the_writer() -> None:
            async with writer_gate(rt.store) as gate:
                gated.set()
                await stop_began.wait()
                with trio.fail_after(10):  # the cut turn's end, queued behind its begin
                    await until(lambda: queued.depth > marks["steered"])
                gate.release()

        outer.start_soon(hold_the_writer)
        await gated.wait()
        before = queued.depth
        outer.start_soon(functools.partial(channel.say, "first", message_id="m1"))
        with trio.fail_after(10):  # its hold, then the turn's begin, behind the gate
            await until(lambda: queued.depth == before + 2)
        assert channel.types() == ["started"]  # the turn is opening; its begin waits
        before = queued.depth
        outer.start_soon(functools.partial(channel.say, "second", message_id="m2"))
        with trio.fail_after(10):  # its hold behind the gate too: it has steered the turn
            await until(lambda: queued.depth == before + 1)
        marks["steered"] = queued.depth
    assert agent.turns == []
    assert [(event.type, getattr(event, "reason", None)) for event in channel.events
            if event.terminal] == [("cancelled", "steer")]
    assert rows(db_path, "SELECT message_id, status, reason FROM turns") == [
        ("m1", "cancelled", "steer")]
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
    [notice] = [text for (text,) in rows(db_path, "SELECT text FROM outbox WHERE kind = "
                                                  "'notice' AND text LIKE '%not answered%'")]
    assert '"second"' in notice
