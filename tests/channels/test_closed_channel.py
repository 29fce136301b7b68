"""A channel that was closed (``channel.close()``: an adapter shutting down, or reloading and
building a new channel of the same name) takes no more messages. A late one (a webhook still in
flight) was handled all the same: the closed channel bound itself again as the session's route,
taking it from the channel that replaced it, so that one's replies went to the closed adapter
until its own next message. It is refused (nothing accepted, as while the runtime stops), and
one that was already being handled when the channel closed binds nothing: its reply is
``unrouted`` and handed back when the conversation next speaks."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.channels import ChannelConfig
from tidings.errors import RuntimeClosedError

from .conftest import RecordingChannel


async def test_a_message_to_a_closed_channel_is_refused(rt) -> None:
    first = RecordingChannel(rt, ChannelConfig("ops"))
    await first.say("hi")
    await first.wait_idle()
    session_id = first.events[0].session_id
    first.close()
    second = RecordingChannel(rt, ChannelConfig("ops"))  # the adapter, reloaded
    await second.say("/status")
    assert rt.router.binding(session_id).route is second
    with pytest.raises(RuntimeClosedError, match="closed"):
        await first.say("late")
    assert rt.router.binding(session_id).route is second
    assert [event.type for event in first.events].count("started") == 1


async def test_a_message_in_hand_when_the_channel_closes_binds_nothing(rt) -> None:
    first = RecordingChannel(rt, ChannelConfig("ops"))
    first.platform.stall()
    async with trio.open_nursery() as nursery:
        # /clear before any session answers through deliver() under the conversation's
        # lock: the message after it waits for that lock, already accepted for handling.
        nursery.start_soon(first.say, "/clear")
        await first.platform.wait_attempted(1)
        nursery.start_soon(first.say, "in flight")
        await trio.testing.wait_all_tasks_blocked()
        first.close()
        first.platform.release()
    await first.wait_idle()
    session_id = first.events[0].session_id
    assert rt.router.binding(session_id) is None
    second = RecordingChannel(rt, ChannelConfig("ops"))
    await second.say("/status")  # the conversation speaks: its reply is handed back
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await second.wait_for(lambda: "in flight" in second.messages())
    assert "in flight" not in first.messages()
