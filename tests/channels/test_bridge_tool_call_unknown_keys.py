"""``turn.report_tool_call`` with a mapping takes ``name``, ``arguments`` and ``call_id``, as
:class:`ToolCall` does. Any other key was dropped without a word: a model's own tool-use block
passed as it came (``{"type": "tool_use", "id": ..., "name": ..., "input": {...}}``), or a typo
(``args``), was reported with empty arguments and no id. It is refused naming the key, as
``ToolCall(input=...)`` is refused."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelConfig, ToolCall
from tidings.errors import ValidationError

from .conftest import RecordingChannel
from .test_bridge_tool_call_mapping import ReportingAgent


@pytest.mark.parametrize(("call", "key"), [
    ({"type": "tool_use", "id": "toolu_1", "name": "ls", "input": {"path": "."}}, "type"),
    ({"name": "ls", "args": {"path": "."}}, "args"),
    ({"name": "ls", "arguments": {}, "callId": "c1"}, "callId"),
])
async def test_a_key_a_tool_call_does_not_have_is_refused_by_name(rt, call, key) -> None:
    with pytest.raises(TypeError):
        ToolCall(**call)
    agent = ReportingAgent(call)
    channel = RecordingChannel(rt, ChannelConfig("ops"), agent=agent)
    await channel.say("go")
    await channel.wait_events("completed")
    assert isinstance(agent.raised, ValidationError)
    assert agent.raised.field == key
    assert "tool_call" not in channel.types()


async def test_the_three_keys_are_taken(rt) -> None:
    agent = ReportingAgent({"name": "ls", "arguments": {"path": "."}, "call_id": "c1"})
    channel = RecordingChannel(rt, ChannelConfig("ops"), agent=agent)
    await channel.say("go")
    await channel.wait_events("completed")
    assert agent.raised is None
    [event] = [event for event in channel.events if event.type == "tool_call"]
    assert event.tool_call == ToolCall(name="ls", arguments={"path": "."}, call_id="c1")
