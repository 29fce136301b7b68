"""A turn ``/clear`` dropped ends (``started``, then ``cancelled``) even when the lifecycle
hook raises a ``BaseException`` that is not ``Cancelled`` (``KeyboardInterrupt``, ``SystemExit``)
on its ``started`` event: that is not the turn's to swallow, but the turn began, so its end
comes before it propagates, as it does for a turn whose agent ran."""

from __future__ import annotations

import pytest

import tidings
from tidings.channels import ChannelConfig
from tidings.supervisor._testing_invariants import lifecycle_violations

from ..real_time import fail_after_real
from .conftest import GatedAgent, Lingering, RecordingChannel


class PulledThePlug(BaseException):
    """Not an ``Exception``: like ``KeyboardInterrupt`` or ``SystemExit``."""


class PlugOnDroppedStart(RecordingChannel):
    def on_task_lifecycle(self, event) -> None:
        super().on_task_lifecycle(event)
        if event.type == "started" and event.message_id == "m2":
            raise PulledThePlug("the hook pulled the plug")


async def test_a_dropped_turn_whose_started_hook_raises_still_ends_cancelled(
        db_path, workspace) -> None:
    agent = GatedAgent()
    channels: list[RecordingChannel] = []

    async def clear_behind_a_turn() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = PlugOnDroppedStart(
                rt, ChannelConfig(name="ops", dispatch_mode="followup"), agent=agent)
            channels.append(channel)
            assert await channel.say("first", message_id="m1") == "started"
            await agent.wait_turns(1)
            assert await channel.say("second", message_id="m2") == "queued"
            assert await channel.say("/clear", message_id="c1") == "command"
            await channel.wait_idle()

    with fail_after_real(30), pytest.raises(PulledThePlug):  # a hang guard, not a wait
        await clear_behind_a_turn()
    [channel] = channels
    assert [(event.message_id, event.type, getattr(event, "reason", None))
            for event in channel.events if event.type != "text_chunk"] == [
        ("m1", "started", None), ("m1", "cancelled", "clear"),
        ("m2", "started", None), ("m2", "cancelled", "clear")]
    assert lifecycle_violations(channel.events) == []


class PlugOnFirstDroppedStartAtStop(RecordingChannel):
    def on_task_lifecycle(self, event) -> None:
        super().on_task_lifecycle(event)
        if event.type == "started" and event.message_id == "m2":
            raise PulledThePlug("the hook pulled the plug")


async def test_at_a_stop_a_hook_raising_on_one_dropped_turn_leaves_the_next_ended(
        db_path, workspace, autojump_clock) -> None:
    """The stop, not the worker, ends the turns ``/clear`` dropped (see
    test_dropped_turns_end_at_stop.py): the hook's ``PulledThePlug`` on the first one's
    ``started`` still goes on, but only once every one of them has ended."""
    agent = Lingering()  # takes a second to stop: the stop comes while it does
    channels: list[RecordingChannel] = []

    async def clear_then_stop() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = PlugOnFirstDroppedStartAtStop(
                rt, ChannelConfig(name="ops", dispatch_mode="followup"), agent=agent)
            channels.append(channel)
            assert await channel.say("first", message_id="m1") == "started"
            await agent.entered.wait()
            assert await channel.say("second", message_id="m2") == "queued"
            assert await channel.say("third", message_id="m3") == "queued"
            assert await channel.say("/clear", message_id="c1") == "command"

    with fail_after_real(30), pytest.RaisesGroup(PulledThePlug, flatten_subgroups=True,
                                                 allow_unwrapped=True):
        await clear_then_stop()
    [channel] = channels
    assert [(event.message_id, event.type, getattr(event, "reason", None))
            for event in channel.events if event.type != "text_chunk"] == [
        ("m1", "started", None), ("m1", "cancelled", "clear"),
        ("m2", "started", None), ("m2", "cancelled", "clear"),
        ("m3", "started", None), ("m3", "cancelled", "clear")]
    assert lifecycle_violations(channel.events) == []
