"""Turn hunt: how a channel turn ends when its agent does something odd."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.channels import AgentTurn, ChannelConfig, ToolCall
from tidings.errors import ValidationError

from .conftest import RecordingChannel, rows


class PulledThePlug(BaseException):
    """Not an ``Exception``: like ``KeyboardInterrupt`` or ``SystemExit``."""


class PlugPuller:
    async def run(self, turn: AgentTurn) -> None:
        await turn.send_chunk("partial")
        raise PulledThePlug("agent pulled the plug")


async def test_hunt_an_agent_base_exception_still_ends_the_turn_with_failed(
        db_path, workspace) -> None:
    # A BaseException is not the turn's to swallow (it stops the runtime), but the turn that
    # raised it still had started: exactly one terminal event, as the turns table says.
    channels: list[RecordingChannel] = []

    async def serve_one_message() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0.5) as rt:
            channels.append(RecordingChannel(rt, ChannelConfig(name="ops"), agent=PlugPuller()))
            await channels[0].say("hi")
            await channels[0].wait_idle()

    with pytest.raises(PulledThePlug):
        await serve_one_message()
    [channel] = channels
    assert channel.types() == ["started", "text_chunk", "failed"]
    [failed] = [event for event in channel.events if event.terminal]
    assert failed.error == "PulledThePlug: agent pulled the plug"
    assert rows(db_path, "SELECT status, error FROM turns") == [
        ("failed", "PulledThePlug: agent pulled the plug")]


class Swallower:
    """A careless agent: it swallows the cancel, then returns as if it had finished."""

    async def run(self, turn: AgentTurn) -> None:
        await turn.send_chunk("half an answer")
        try:
            await trio.sleep_forever()
        except trio.Cancelled:
            pass


async def test_hunt_an_agent_that_swallows_the_shutdown_cancel_is_cancelled_shutdown(
        db_path, workspace) -> None:
    # As with /cancel and the turn timeout: the turn was cancelled while it ran, and a
    # careless agent returning afterwards does not make it completed (nor send its half reply).
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=Swallower())
        await channel.say("still thinking")
        await channel.wait_events("text_chunk")
    assert channel.types() == ["started", "text_chunk", "cancelled"]
    assert [event.reason for event in channel.events if event.type == "cancelled"] == [
        "shutdown"]
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "shutdown")]
    assert rows(db_path, "SELECT count(*) FROM outbox WHERE kind = 'message'") == [(0,)]


async def test_hunt_an_agent_that_swallows_cancel_command_is_cancelled(rt, db_path) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=Swallower())
    await channel.say("go")
    await channel.wait_events("text_chunk")
    await channel.say("/cancel")
    await channel.wait_idle()
    assert channel.types() == ["started", "text_chunk", "cancelled"]
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "cancel_command")]


@pytest.mark.parametrize("call_id", [5, ["a"], {"id": 1}, b"id"])
def test_hunt_a_tool_call_id_that_is_not_a_string_is_refused_by_name(call_id: object) -> None:
    # Events carry only immutable metadata (a hook cannot change what the next one sees):
    # a list call_id was kept as it was, mutable, in a frozen event.
    with pytest.raises(ValidationError) as info:
        ToolCall(name="search", call_id=call_id)  # type: ignore[arg-type]
    assert info.value.field == "call_id"
    assert ToolCall(name="search", call_id="c1").call_id == "c1"
    assert ToolCall(name="search").call_id is None
