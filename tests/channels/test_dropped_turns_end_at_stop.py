"""A waiting turn ``/clear`` dropped, or ``/cancel`` cancelled, that its worker had not reached
when the runtime stops still ends: ``started``, then ``cancelled`` with the command's reason,
at the stop (its messages were released by the command, or are released there: nothing is
left for the next start to say about it). Before, only a worker that reached such a turn ended
it, so an adapter or a gateway client waiting for its message's end waited for ever. No "not
answered" notice for it: the user asked for the clear or the cancel."""

from __future__ import annotations

import tidings
from tidings.channels import ChannelConfig
from tidings.supervisor._testing_invariants import lifecycle_violations

from ..real_time import fail_after_real
from .conftest import Lingering, RecordingChannel, rows

CLEARED = "Cleared. Your next message starts a new session."


def ends(channel: RecordingChannel) -> list[tuple[str | None, str, str | None]]:
    """``(message_id, event type, reason)`` of every event but the streamed ones."""
    return [(event.message_id, event.type, getattr(event, "reason", None))
            for event in channel.events if event.type not in ("text_chunk", "tool_call")]


def not_answered(db_path) -> list[str]:
    return [text for (text,) in rows(db_path, "SELECT text FROM outbox WHERE kind = 'notice'")
            if "was not answered" in text]


async def test_turns_clear_dropped_end_cancelled_clear_when_the_stop_comes_first(
        db_path, workspace, autojump_clock) -> None:
    agent = Lingering()  # takes a second to stop: the stop comes while it does
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                       agent=agent)
            assert await channel.say("first", message_id="m1") == "started"
            await agent.entered.wait()
            assert await channel.say("second", message_id="m2") == "queued"
            assert await channel.say("third", message_id="m3") == "queued"
            assert await channel.say("/clear", message_id="c1") == "command"
            assert ends(channel) == [("m1", "started", None)]  # m1 still stopping
    assert ends(channel) == [
        ("m1", "started", None), ("m1", "cancelled", "clear"),
        ("m2", "started", None), ("m2", "cancelled", "clear"),
        ("m3", "started", None), ("m3", "cancelled", "clear")]
    assert lifecycle_violations(channel.events) == []
    assert agent.texts == ["first"]
    assert not_answered(db_path) == []
    assert [text for (text,) in rows(db_path, "SELECT text FROM outbox WHERE kind = 'notice'")
            ] == [CLEARED]


async def test_a_waiting_turn_cancel_cancelled_ends_cancelled_when_the_stop_comes_first(
        db_path, workspace, autojump_clock) -> None:
    agent = Lingering()
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                       agent=agent)
            assert await channel.say("first", message_id="m1") == "started"
            await agent.entered.wait()
            assert await channel.say("second", message_id="m2") == "queued"
            assert await channel.say("/cancel") == "command"  # the running one
            assert await channel.say("/cancel") == "command"  # it is ending: the waiting one
            assert ends(channel) == [("m1", "started", None)]
    assert ends(channel) == [
        ("m1", "started", None), ("m1", "cancelled", "cancel_command"),
        ("m2", "started", None), ("m2", "cancelled", "cancel_command")]
    assert lifecycle_violations(channel.events) == []
    assert agent.texts == ["first"]
    # The user cancelled it: released, no "not answered" notice, now or at the next start.
    assert not_answered(db_path) == []
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
