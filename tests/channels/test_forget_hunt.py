"""Hunt: sessions the directory forgot (see channels/_directory.py)."""

from __future__ import annotations

import trio

from tidings.channels import ChannelConfig

from .conftest import RecordingChannel
from .test_directory_memory import _cycle


async def test_a_notice_written_after_the_next_message_still_reaches_the_chat(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await _cycle(channel, 0)
    old = channel.events[0].session_id
    await _cycle(channel, 1)
    assert rt.router.binding(old) is None  # forgotten
    await channel.say("again")  # hands back: nothing of the old session yet
    await channel.wait_for(lambda: "again" in channel.messages())
    handle = await rt.notify(old, "late news")  # a host writes in the old session now
    assert await handle.wait() == "unrouted"
    await channel.say("more")  # the conversation speaks again
    await channel.wait_for(lambda: "more" in channel.messages())
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.wait_for(lambda: "late news" in channel.notices())

