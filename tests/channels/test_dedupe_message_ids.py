"""``ChannelConfig(dedupe_message_ids=True)``: a platform message id handled before is a
``duplicate``, so a webhook the platform delivers again starts no second turn, also after a
restart; without it every delivery is handled (the default, unchanged)."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.errors import ConfigError

from .conftest import GatedAgent, RecordingChannel

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)


async def test_a_message_id_seen_before_is_a_duplicate_and_runs_no_second_turn(
        db_path, workspace) -> None:
    agent = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=agent)
        assert await channel.say("hello", message_id="m1") == "started"
        await agent.wait_turns(1)
        assert await channel.say("hello", message_id="m1") == "duplicate"
        assert await channel.say("/status", message_id="m2") == "command"
        assert await channel.say("/status", message_id="m2") == "duplicate"
        # Ids are per conversation, and a message with none is always handled.
        assert await channel.say("hello", message_id="m1", chat_id="c2") == "started"
        assert await channel.say("no id") in ("started", "queued", "merged")
        assert await channel.say("no id") in ("started", "queued", "merged")
        await channel.wait_idle()
    assert [turn.text for turn in agent.turns].count("hello") == 2  # c1 once, c2 once


async def test_a_message_id_is_remembered_across_a_restart(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=GatedAgent(block=False))
        assert await channel.say("hello", message_id="m1") == "started"
        assert await channel.say("/help", message_id="m2") == "command"
        await channel.wait_idle()
    agent = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=agent)
        assert await channel.say("hello", message_id="m1") == "duplicate"
        assert await channel.say("/help", message_id="m2") == "duplicate"
        assert await channel.say("hello", message_id="m3") == "started"
        await channel.wait_idle()
    assert [turn.text for turn in agent.turns] == ["hello"]


async def test_twins_delivered_at_the_same_moment_are_handled_once(db_path, workspace) -> None:
    agent = GatedAgent(block=False)
    outcomes: list[str] = []
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=agent)

        async def deliver_webhook() -> None:
            outcomes.append(await channel.say("hello", message_id="m1"))

        async with trio.open_nursery() as nursery:
            for _ in range(5):
                nursery.start_soon(deliver_webhook)
        await channel.wait_idle()
    assert sorted(outcomes) == ["duplicate"] * 4 + ["started"]
    assert [turn.text for turn in agent.turns] == ["hello"]


async def test_without_the_key_every_delivery_is_handled(db_path, workspace) -> None:
    agent = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig("ops", dispatch_mode="followup"),
                                   agent=agent)
        assert await channel.say("hello", message_id="m1") == "started"
        await agent.wait_turns(1)
        assert await channel.say("hello", message_id="m1") != "duplicate"
        await channel.wait_idle()
    assert [turn.text for turn in agent.turns] == ["hello", "hello"]


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_the_key_takes_true_or_false_only(value) -> None:
    with pytest.raises(ConfigError) as caught:
        ChannelConfig("ops", dedupe_message_ids=value)
    assert caught.value.field == "channels.ops.dedupe_message_ids"


def test_the_key_is_read_from_toml_in_either_spelling() -> None:
    for key in ("dedupe_message_ids", "dedupeMessageIds"):
        assert ChannelConfig.from_mapping("ops", {key: True}).dedupe_message_ids is True
    assert ChannelConfig("ops").dedupe_message_ids is False
