"""A lifecycle hook stuck on a turn's ``started`` event is given up after the grace, as one
stuck on a terminal event is, and the log says so (the turn's start was held for those
seconds: the operator is told why)."""

from __future__ import annotations

import logging

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig

from .conftest import RecordingChannel


class StuckOnStarted(RecordingChannel):
    async def on_task_lifecycle(self, event) -> None:
        super().on_task_lifecycle(event)
        if event.type == "started":
            await trio.sleep_forever()


async def test_a_hook_stuck_on_started_is_given_up_and_logged(
        db_path, workspace, autojump_clock, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="tidings.channels"):
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            channel = StuckOnStarted(rt, ChannelConfig(name="ops"))
            await channel.say("hi")
            with trio.fail_after(60):  # hang guard (mock clock)
                await channel.wait_idle()
    assert channel.types() == ["started", "text_chunk", "completed"]
    assert "did not finish the started event" in caplog.text
