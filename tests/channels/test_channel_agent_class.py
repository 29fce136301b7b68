"""``ChannelBase(rt, config, agent=...)`` takes an agent instance. The class itself
(``agent=EchoAgent``, the call's parentheses forgotten) has a ``run`` that is a coroutine
function, so it was taken, and every turn then failed with a ``TypeError`` about a missing
``turn`` argument; it is refused by name when the channel is built, as a plain ``def run`` is.
(A config's ``agent`` import path names a class, which ``load_agent`` calls.)"""

from __future__ import annotations

import pytest

from tidings.channels import ChannelConfig, EchoAgent
from tidings.errors import ValidationError

from .conftest import RecordingChannel


class StaticAgent:
    """A class whose ``run`` needs no instance: the class is an agent."""

    @staticmethod
    async def run(turn) -> None:  # type: ignore[no-untyped-def]
        await turn.send_chunk("static")


async def test_an_agent_class_instead_of_an_instance_is_refused_by_name(rt) -> None:
    with pytest.raises(ValidationError) as caught:
        RecordingChannel(rt, ChannelConfig("ops"), agent=EchoAgent)
    assert caught.value.field == "agent"
    assert "EchoAgent()" in str(caught.value)


async def test_a_class_whose_run_needs_no_instance_is_still_an_agent(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig("ops"), agent=StaticAgent)
    assert await channel.say("hi") == "started"
    await channel.wait_idle()
    await channel.wait_for(lambda: channel.messages())
    assert channel.messages() == ["static"]
