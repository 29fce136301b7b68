"""A turn of several merged messages (``collect``) writes what the users said to history in one
commit: all of them or none. Written one commit each, a write that failed (or a crash) between
them left the first half in history, as if the user had said only that, while the turn failed
(or, after a crash, every one of them was told "not answered")."""

from __future__ import annotations

import tidings
from tidings.channels import ChannelConfig
from tidings.store import Call

from .conftest import GatedAgent, RecordingChannel, rows


def refuse_second(conn: object) -> None:
    conn.execute(  # type: ignore[attr-defined]
        "CREATE TEMP TRIGGER refuse_second BEFORE INSERT ON messages "
        "WHEN NEW.role = 'user' AND NEW.text = 'second' "
        "BEGIN SELECT RAISE(ABORT, 'the disk said no'); END")


async def test_the_messages_of_a_merged_turn_reach_history_all_or_none(
        db_path, workspace) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="collect"),
                                   agent=agent)
        assert await channel.say("zero") == "started"
        await agent.wait_turns(1)
        assert [await channel.say(text) for text in ("first", "second")] == [
            "queued", "merged"]
        await rt.store.commit([Call(refuse_second)])
        agent.block = False
        agent.release()
        await channel.wait_idle()
        assert [e.type for e in channel.events if e.terminal] == ["completed", "failed"]
        assert len(agent.turns) == 1  # the merged turn's agent never ran
    said = [text for (text,) in rows(db_path, "SELECT text FROM messages WHERE role = 'user' "
                                              "ORDER BY rowid")]
    assert said == ["zero"]
    # The failed turn dealt with both (its failed event is what the user is shown).
    assert rows(db_path, "SELECT * FROM inbound_messages") == []
