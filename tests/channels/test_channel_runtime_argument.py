"""A channel is built on the runtime of ``async with tidings.open_runtime(...) as rt``. Anything
else (``None``, or the ``open_runtime(...)`` call itself, never entered) was taken, and the
channel's first message failed with an ``AttributeError`` about ``check_open``, naming nothing
the adapter wrote; it is refused by name when the channel is built."""

from __future__ import annotations

import pytest

import tidings
from tidings.channels import ChannelConfig
from tidings.errors import RuntimeClosedError, ValidationError

from .conftest import RecordingChannel


@pytest.mark.parametrize("runtime", [None, "tidings.db", object()])
def test_a_channel_needs_a_runtime(runtime) -> None:
    with pytest.raises(ValidationError) as caught:
        RecordingChannel(runtime, ChannelConfig("ops"))
    assert caught.value.field == "runtime"


async def test_the_open_runtime_call_itself_is_not_a_runtime(db_path, workspace) -> None:
    opening = tidings.open_runtime(db_path, workspace=workspace)  # never entered
    with pytest.raises(ValidationError) as caught:
        RecordingChannel(opening, ChannelConfig("ops"))
    assert caught.value.field == "runtime"
    assert "open_runtime" in str(caught.value)


async def test_a_runtime_that_has_stopped_refuses_messages_as_documented(
        db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        pass
    channel = RecordingChannel(rt, ChannelConfig("ops"))
    with pytest.raises(RuntimeClosedError):
        await channel.say("hi")
