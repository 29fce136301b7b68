"""/cancel sent while the running turn is already ending (steered away, or its reply being
written) cancels the request waiting to run next, rather than answering "Nothing to cancel."
and letting it run."""

from __future__ import annotations

import trio

import tidings
from tidings.channels import ChannelConfig

from ..until import until
from .conftest import RecordingChannel, rows


class SlowToStop:
    """Its first run streams, then, once cancelled, takes until ``stopped`` is set to wind
    down (a process to kill, a request to abort); later runs answer at once."""

    def __init__(self) -> None:
        self.entered = trio.Event()
        self.winding_down = trio.Event()
        self.stopped = trio.Event()
        self.texts: list[str] = []

    async def run(self, turn) -> None:
        self.texts.append(turn.text)
        if len(self.texts) > 1:
            await turn.send_chunk(f"answered {turn.text}")
            return
        await turn.send_chunk("working")
        self.entered.set()
        try:
            await trio.sleep_forever()
        finally:
            self.winding_down.set()
            with trio.CancelScope(shield=True):
                await self.stopped.wait()


def cancels(channel: RecordingChannel) -> list[str]:
    return [event.reason for event in channel.events if event.type == "cancelled"]


async def test_cancel_while_a_steered_turn_winds_down_cancels_the_message_that_steered(
        rt, db_path) -> None:
    agent = SlowToStop()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("first")
    await agent.entered.wait()
    assert await channel.say("second") == "queued"  # steers: the first turn winds down
    await agent.winding_down.wait()
    try:
        await channel.say("/cancel")  # meant for "second", the request about to run
        await channel.wait_for(lambda: channel.notices())
    finally:
        agent.stopped.set()
    await channel.wait_idle()
    assert channel.notices() == ["Cancelled the running request."]
    assert agent.texts == ["first"]  # the agent never got "second"
    assert channel.messages() == []
    assert cancels(channel) == ["steer", "cancel_command"]
    assert rows(db_path, "SELECT status, reason FROM turns ORDER BY started_at") == [
        ("cancelled", "steer"), ("cancelled", "cancel_command")]
    # What the user said is history, as for any turn cancelled while it opens; nothing is
    # left held (no "not answered" notice after a restart).
    assert rows(db_path, "SELECT role, text FROM messages ORDER BY history_id") == [
        ("user", "first"), ("user", "second")]
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]


async def test_a_message_after_such_a_cancel_runs_on_its_own(rt) -> None:
    agent = SlowToStop()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("first")
    await agent.entered.wait()
    await channel.say("second")
    await agent.winding_down.wait()
    await channel.say("/cancel")
    try:
        assert await channel.say("third") == "queued"  # not merged into the cancelled turn
    finally:
        agent.stopped.set()
    await channel.wait_idle()
    assert agent.texts == ["first", "third"]
    assert channel.messages() == ["answered third"]
    assert cancels(channel) == ["steer", "cancel_command"]


async def test_a_cancelled_waiting_turn_the_stop_drops_is_not_called_unanswered(
        db_path, workspace) -> None:
    agent = SlowToStop()
    async with (trio.open_nursery() as nursery,
                tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt):
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
        await channel.say("first")
        await agent.entered.wait()
        await channel.say("second")
        await agent.winding_down.wait()
        await channel.say("/cancel")
        await channel.wait_for(lambda: channel.notices())

        async def stop_winding_down_once_stopping() -> None:
            await until(lambda: rt.tasks.stopping)
            agent.stopped.set()

        nursery.start_soon(stop_winding_down_once_stopping)
    # The user cancelled "second": the stop that then kept it from running does not ask
    # them to send it again, now or after a restart.
    assert channel.notices() == ["Cancelled the running request."]
    assert rows(db_path, "SELECT count(*) FROM outbox WHERE text LIKE '%not answered%'") == [
        (0,)]
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
