"""An agent whose ``run`` returns a value (``return answer`` where ``await
turn.send_chunk(answer)`` was meant) completed its turn with no reply and no word about why.
``run`` returns None (the reply is what it streams, or what it sends through ``turn.output``):
a value it returns is not sent, and a warning now says so, naming the agent."""

from __future__ import annotations

import logging

import pytest

from tidings.channels import ChannelConfig

from .conftest import RecordingChannel


class ReturningAgent:
    async def run(self, turn) -> str:
        return f"answer to {turn.text}"


class StreamingAgent:
    async def run(self, turn) -> None:
        await turn.send_chunk(f"answer to {turn.text}")


async def test_a_value_run_returns_is_not_sent_and_is_warned_about(rt, caplog) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=ReturningAgent())
    with caplog.at_level(logging.WARNING, logger="tidings.channels"):
        await channel.say("hi")
        await channel.wait_events("completed")
    assert channel.types() == ["started", "completed"]
    assert await rt.deliveries(session_id=channel.events[0].session_id) == []
    [record] = [r for r in caplog.records if "agent_returned_a_value" in r.getMessage()]
    assert record.levelno == logging.WARNING
    assert record.name == "tidings.channels.agent"
    message = record.getMessage()
    assert f"agent={__name__}.ReturningAgent" in message
    assert f"session={channel.events[0].session_id}" in message
    assert "returned=str" in message
    assert "turn.send_chunk" in message


@pytest.mark.parametrize("agent", [StreamingAgent(), None], ids=["streams", "echo"])
async def test_an_agent_that_returns_none_is_not_warned_about(rt, caplog, agent) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    with caplog.at_level(logging.WARNING, logger="tidings.channels"):
        await channel.say("hi")
        await channel.wait_events("completed")
        await channel.wait_outbounds(1)
    assert "agent_returned_a_value" not in caplog.text
