"""Turn hunt: how a channel turn ends when its agent does something odd."""

from __future__ import annotations

import pytest

import tidings
from tidings.channels import AgentTurn, ChannelConfig

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
