"""A channel's ``instructions`` go before the first prompt of every session: text that is not
valid Unicode (a lone surrogate, what ``surrogateescape`` makes of a file that is not UTF-8)
could be neither sent nor stored, so every session's first turn failed (an echo of it was
refused as ``text``, naming nothing the host wrote). It is refused by name when the config is
built, as every text the runtime takes is."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelConfig
from tidings.errors import ConfigError

from .conftest import RecordingChannel


@pytest.mark.parametrize("build", [
    lambda text: ChannelConfig("ops", instructions=text),
    lambda text: ChannelConfig.from_mapping("ops", {"instructions": text}),
])
def test_instructions_that_are_not_valid_unicode_are_refused_by_name(build) -> None:
    with pytest.raises(ConfigError) as info:
        build("Be \ud800 brief.")
    assert info.value.field == "channels.ops.instructions"
    assert "Unicode" in str(info.value)


async def test_the_first_turn_gets_valid_instructions(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig("ops", instructions="Sé breve. \U0001f600"))
    await channel.say("hi")
    await channel.wait_events("completed")
    await channel.wait_for(lambda: channel.messages())
    assert channel.messages() == ["Sé breve. \U0001f600\n\nhi"]
