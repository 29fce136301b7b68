"""A value of the wrong type given to a turn's ``send_chunk`` or ``report_tool_call`` is a
``TypeError`` whose message names the argument (README, Errors), as ``send_text(1)``'s names
``text``: it named only the method, so an agent passing a model's content block list to
``send_chunk`` was not told which of its values was wrong."""

from __future__ import annotations

from tidings.channels import ChannelConfig

from .conftest import RecordingChannel


class WrongTypes:
    """Calls each method with a value of the wrong type; keeps the errors."""

    def __init__(self) -> None:
        self.raised: dict[str, TypeError] = {}

    async def run(self, turn) -> None:
        for name, call in (("send_chunk", lambda: turn.send_chunk([{"text": "hi"}])),
                           ("report_tool_call", lambda: turn.report_tool_call("search"))):
            try:
                await call()
            except TypeError as exc:
                self.raised[name] = exc
        await turn.send_chunk("done")


async def test_the_type_error_names_the_argument(rt) -> None:
    agent = WrongTypes()
    channel = RecordingChannel(rt, ChannelConfig("ops"), agent=agent)
    await channel.say("go")
    await channel.wait_events("completed")
    assert set(agent.raised) == {"send_chunk", "report_tool_call"}
    assert "text" in str(agent.raised["send_chunk"]).split(), agent.raised
    assert "call" in str(agent.raised["report_tool_call"]).split(), agent.raised
    assert "list" in str(agent.raised["send_chunk"])
    assert "str" in str(agent.raised["report_tool_call"])
