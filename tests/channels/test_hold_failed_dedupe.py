"""``dedupe_message_ids``: a message accepted although its hold could not be written (the
write failed; the turn runs all the same) still has its id remembered, written alone after
the failed transaction took it down. Without that, the platform's retry of the same webhook
was a new message and started a second turn for it."""

from __future__ import annotations

import logging

import tidings
from tidings.channels import ChannelConfig
from tidings.store import Call

from .conftest import GatedAgent, RecordingChannel

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)


def refuse_holds(conn: object) -> None:
    conn.execute("CREATE TEMP TRIGGER refuse_holds BEFORE INSERT ON inbound_messages "  # type: ignore[attr-defined]
                 "BEGIN SELECT RAISE(ABORT, 'the disk said no'); END")


def allow_holds(conn: object) -> None:
    conn.execute("DROP TRIGGER temp.refuse_holds")  # type: ignore[attr-defined]


async def test_the_id_of_a_message_accepted_without_its_hold_is_still_remembered(
        db_path, workspace, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="tidings.channels")
    agent = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=agent)
        await channel.say("/help")  # the session and its hand-back exist before the fault
        await rt.store.commit([Call(refuse_holds)])
        assert await channel.say("hello", message_id="m1") == "started"
        await rt.store.commit([Call(allow_holds)])
        assert any("hold_failed" in record.getMessage() for record in caplog.records)
        await agent.wait_turns(1)
        assert await channel.say("hello", message_id="m1") == "duplicate"
        await channel.wait_idle()
    assert [turn.text for turn in agent.turns] == ["hello"]
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:  # durably
        channel = RecordingChannel(rt, DEDUPE, agent=agent)
        assert await channel.say("hello", message_id="m1") == "duplicate"
