"""A chunk or tool call reported after the turn ended (by work the agent left running when it
returned) is refused with RuntimeClosedError, as a send from an ended turn is, instead of being
dropped without a word: nobody would ever see it."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig, ToolCall
from tidings.errors import RuntimeClosedError

from .conftest import RecordingChannel


@pytest.mark.parametrize("late", ["chunk", "tool_call"])
async def test_work_that_outlives_its_turn_is_told_the_turn_ended(rt, late) -> None:
    turn_ended, told = trio.Event(), trio.Event()
    outcome: list[str] = []

    async def background(turn) -> None:
        await turn_ended.wait()
        try:
            if late == "chunk":
                await turn.send_chunk("the rest of the answer")
            else:
                await turn.report_tool_call(ToolCall(name="search"))
            outcome.append("taken")
        except RuntimeClosedError:
            outcome.append("refused")
        finally:
            told.set()

    class LeavesWorkBehind:
        async def run(self, turn) -> None:
            rt.start_task("background", background, turn)
            await turn.send_chunk("first part")

    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=LeavesWorkBehind())
    await channel.say("hi")
    await channel.wait_idle()
    turn_ended.set()
    with trio.fail_after(10):  # hang guard
        await told.wait()
    assert outcome == ["refused"]
    assert channel.types() == ["started", "text_chunk", "completed"]
    assert channel.messages() == ["first part"]


async def test_a_chunk_after_a_cancel_is_still_dropped_quietly(rt) -> None:
    """Within the turn, a chunk after its cancel was recorded is dropped, as before, with no
    error (here from the agent's shielded cleanup; unshielded, its Cancelled stops it)."""
    entered = trio.Event()
    seen: list[str] = []

    class KeepsStreaming:
        async def run(self, turn) -> None:
            await turn.send_chunk("one")
            entered.set()
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True):
                    await turn.send_chunk("two")  # after the cancel: dropped, no error
                    seen.append("dropped")

    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=KeepsStreaming())
    await channel.say("hi")
    await entered.wait()
    await channel.say("/cancel")
    await channel.wait_idle()
    assert seen == ["dropped"]
    assert [e.chunk for e in channel.events if e.type == "text_chunk"] == ["one"]


class StreamsInCleanup:
    """Streams one chunk, waits; cancelled, its shielded cleanup streams a chunk and reports
    a tool call (no ``Cancelled`` can stop them there), then the turn ends."""

    def __init__(self) -> None:
        self.entered = trio.Event()
        self.cleaned_up = False

    async def run(self, turn) -> None:
        await turn.send_chunk("one")
        self.entered.set()
        try:
            await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await turn.send_chunk("two")
                await turn.report_tool_call(ToolCall(name="cleanup"))
                self.cleaned_up = True


async def test_a_chunk_after_the_turn_timed_out_is_dropped(rt, autojump_clock) -> None:
    """A timeout is a cancel too, though nothing records it before somebody looks: the
    cleanup's chunk and tool call were emitted (a gateway streamed them to the user) after
    the deadline had cut the turn."""
    agent = StreamsInCleanup()
    channel = RecordingChannel(rt, ChannelConfig(name="ops", turn_timeout=5), agent=agent)
    await channel.say("hi")
    with trio.fail_after(60):  # hang guard (mock clock)
        await channel.wait_idle()
    assert agent.cleaned_up
    assert channel.types() == ["started", "text_chunk", "cancelled"]
    assert [event.reason for event in channel.events if event.terminal] == ["timeout"]


async def test_a_chunk_after_the_stop_cut_the_turn_is_dropped(db_path, workspace,
                                                              autojump_clock) -> None:
    """The runtime's stop cancels a turn still running after the grace (``shutdown``): its
    cleanup's chunk and tool call are dropped as after ``/cancel``."""
    agent = StreamsInCleanup()
    with trio.fail_after(60):  # hang guard (mock clock)
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0.5) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
            await channel.say("hi")
            await agent.entered.wait()
    assert agent.cleaned_up
    assert channel.types() == ["started", "text_chunk", "cancelled"]
    assert [event.reason for event in channel.events if event.terminal] == ["shutdown"]
