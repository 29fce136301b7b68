"""``turn.report_tool_call`` takes a mapping as it takes a :class:`ToolCall`: the same
fields, refused by the same names. A falsy ``arguments`` that is not a mapping (``[]``, ``0``,
``""``, ``False``) was taken for ``{}`` while ``[1]`` was refused; only a missing or ``None``
``arguments`` is empty, as for ``ToolCall`` itself."""

from __future__ import annotations

from typing import Any

import pytest

from tidings.channels import ChannelConfig, ToolCall
from tidings.errors import ValidationError

from .conftest import RecordingChannel


class ReportingAgent:
    """Reports one tool call given as a mapping; keeps what it raised."""

    def __init__(self, call: dict[str, Any]) -> None:
        self.call = call
        self.raised: BaseException | None = None

    async def run(self, turn) -> None:
        try:
            await turn.report_tool_call(self.call)
        except ValidationError as exc:
            self.raised = exc
        await turn.send_chunk("done")


@pytest.mark.parametrize("arguments", [[], 0, "", False, [1], "q"])
async def test_arguments_that_are_not_a_mapping_are_refused_by_name(rt, arguments) -> None:
    with pytest.raises(ValidationError) as direct:
        ToolCall(name="search", arguments=arguments)
    agent = ReportingAgent({"name": "search", "arguments": arguments})
    channel = RecordingChannel(rt, ChannelConfig("ops"), agent=agent)
    await channel.say("go")
    await channel.wait_events("completed")
    assert isinstance(agent.raised, ValidationError)
    assert agent.raised.field == direct.value.field == "arguments"
    assert "tool_call" not in channel.types()


@pytest.mark.parametrize("call", [{"name": "search"}, {"name": "search", "arguments": None}])
async def test_missing_arguments_are_empty(rt, call) -> None:
    agent = ReportingAgent(call)
    channel = RecordingChannel(rt, ChannelConfig("ops"), agent=agent)
    await channel.say("go")
    await channel.wait_events("completed")
    assert agent.raised is None
    [event] = [event for event in channel.events if event.type == "tool_call"]
    assert event.tool_call == ToolCall(name="search")
