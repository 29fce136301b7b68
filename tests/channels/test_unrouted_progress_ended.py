"""A progress note that found no route (its session left by ``/new``, forgotten) is ended when
the conversation next speaks: ``failed`` with ``stale_progress``, never sent late, so it does
not stay ``unrouted`` (owed, never pruned) for ever."""

from __future__ import annotations

from tidings.channels import ChannelConfig

from .conftest import RecordingChannel
from .test_directory_memory import _cycle


async def test_a_left_sessions_progress_is_ended_at_the_next_message(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await _cycle(channel, 0)
    old = channel.events[0].session_id
    await _cycle(channel, 1)
    assert rt.router.binding(old) is None  # forgotten
    handle = await rt.notify(old, "still working", kind="progress")
    assert await handle.wait() == "unrouted"
    await channel.say("again")
    await channel.wait_for(lambda: "again" in channel.messages())
    status = await rt.delivery_status(handle.delivery_id)
    assert (status.outbox_status, status.last_error) == ("failed", "stale_progress")
    assert "still working" not in channel.texts()
    types = [event.type for event in await rt.delivery_events(handle.delivery_id)]
    assert types[-3:] == ["delivery.unrouted", "delivery.requeued", "delivery.failed"]
    # The handle keeps its first outcome; the durable status is followed with delivery_status.
    assert handle.status == "unrouted"
    assert await handle.wait() == "unrouted"
