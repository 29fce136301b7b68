"""An agent's ``run`` is called with the turn alone. One that needs more (``async def
run(self, turn, extra)``, a loop's ``run(self, turn, context)`` copied in) or none was taken,
and every turn then failed with a ``TypeError`` about the arguments, logged as the agent's
own failure; it is refused by name when the channel is built, as a plain ``def run`` is.
A run that can be called with the turn alone (defaults, ``*args``) is taken."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelConfig
from tidings.errors import ValidationError

from .conftest import RecordingChannel


class NeedsMore:
    async def run(self, turn, extra) -> None:  # type: ignore[no-untyped-def]
        await turn.send_chunk(extra)


class NeedsNothing:
    async def run(self) -> None:
        pass


class KeywordOnly:
    async def run(self, turn, *, context) -> None:  # type: ignore[no-untyped-def]
        await turn.send_chunk(context)


class WithDefault:
    async def run(self, turn, extra="") -> None:  # type: ignore[no-untyped-def]
        await turn.send_chunk(f"ok{extra}")


class TakesAnything:
    async def run(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        await args[0].send_chunk("ok")


@pytest.mark.parametrize("agent", [NeedsMore(), NeedsNothing(), KeywordOnly()],
                         ids=["two arguments", "none", "a keyword-only one"])
async def test_a_run_that_cannot_take_the_turn_alone_is_refused_by_name(rt, agent) -> None:
    with pytest.raises(ValidationError) as caught:
        RecordingChannel(rt, ChannelConfig("ops"), agent=agent)
    assert caught.value.field == "agent"
    assert "run(turn)" in str(caught.value)


@pytest.mark.parametrize("agent", [WithDefault(), TakesAnything()],
                         ids=["a default", "*args"])
async def test_a_run_that_takes_the_turn_alone_answers(rt, agent) -> None:
    channel = RecordingChannel(rt, ChannelConfig("ops"), agent=agent)
    assert await channel.say("hi") == "started"
    await channel.wait_idle()
    assert [o.text for o in channel.outbounds] == ["ok"]
