"""MemoryChannel.wait_for: a plain predicate, refused by name otherwise."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import ValidationError
from tidings.testing import MemoryChannel


async def test_wait_for_refuses_a_predicate_it_cannot_call_by_name(rt) -> None:
    # An async predicate answered a coroutine, which is true: wait_for returned at once,
    # whatever it was to wait for (and a coroutine was never awaited); a value that is no
    # callable raised "TypeError: 'list' object is not callable".
    channel = MemoryChannel(rt)

    async def said_hello() -> bool:
        return channel.texts() == ["hello"]

    for predicate in (said_hello, channel.outbounds):
        with trio.fail_after(5), pytest.raises(ValidationError) as raised:
            await channel.wait_for(predicate)
        assert raised.value.field == "predicate"
    await channel.say("hello")
    with trio.fail_after(5):
        await channel.wait_for(lambda: channel.texts() == ["hello"])
