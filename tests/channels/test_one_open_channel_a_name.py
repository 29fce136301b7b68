"""A second channel of a name while one of that name is open in the runtime is refused by
name (``ValidationError`` naming ``name``); once the first is closed, it is taken.

Both were taken: each had its own sessions' directory, lock, dispatch and ids in flight over
the one set of sessions the name owns durably. A message on the second (two
``GatewayChannel``s, both named ``gateway`` by default, on two ports) did not steer the turn
the first ran in the same session; it waited behind it, and the first's reply went to the
second channel, the one bound last, never to the chat that asked."""

from __future__ import annotations

import gc

import pytest

import tidings
from tidings.channels import ChannelConfig, GatewayChannel, GatewayConfig
from tidings.errors import ValidationError

from .conftest import RecordingChannel

OPS = ChannelConfig("ops")


async def test_a_second_open_channel_of_a_name_is_refused(rt) -> None:
    first = RecordingChannel(rt, OPS)
    with pytest.raises(ValidationError) as refused:
        RecordingChannel(rt, ChannelConfig("ops", instructions="Be brief."))
    assert refused.value.field == "name"
    assert "'ops'" in str(refused.value)
    assert await first.say("hello") == "started"  # the first is untouched


async def test_a_second_gateway_named_alike_is_refused(rt) -> None:
    # Held: a channel nobody holds is gone once collected, and its name is free then.
    first = GatewayChannel(rt, GatewayConfig(token="t" * 32, port=0))
    gc.collect()
    with pytest.raises(ValidationError) as refused:
        GatewayChannel(rt, GatewayConfig(token="t" * 32, port=0))
    assert refused.value.field == "name"
    assert not first.directory.closed


async def test_a_channel_of_a_closed_ones_name_or_another_is_taken(
        rt, db_path, workspace) -> None:
    first = RecordingChannel(rt, OPS)
    RecordingChannel(rt, ChannelConfig("other"))
    first.close()
    second = RecordingChannel(rt, OPS)  # a reload: the closed one's successor
    assert await second.say("hello") == "started"
    await second.wait_idle()
    async with tidings.open_runtime(db_path.with_name("other.db"), workspace=workspace) as other:
        RecordingChannel(other, OPS)  # another runtime's channel of that name


async def test_a_dropped_unclosed_channel_frees_its_name_whenever_the_collector_ran(
        rt) -> None:
    """A channel dropped without close() (never used, or whose subclass __init__ failed after
    the base's) is garbage in reference cycles. Its name is free for the next channel at
    once, not only after the collector happened to run: with collection off, it was refused."""
    gc.disable()
    try:
        RecordingChannel(rt, OPS)  # dropped at once, unclosed
        second = RecordingChannel(rt, OPS)
    finally:
        gc.enable()
    assert await second.say("hello") == "started"
    await second.wait_idle()
