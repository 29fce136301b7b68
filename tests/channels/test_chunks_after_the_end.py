"""A chunk or tool call reported after the turn ended (by work the agent left running when it
returned) is refused with RuntimeClosedError, as a send from an ended turn is, instead of being
dropped without a word: nobody would ever see it."""

from __future__ import annotations

import pytest
import trio

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
