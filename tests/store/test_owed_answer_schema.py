"""Schema v8: a message id's record may owe its command's direct answer
(``client_messages.answer``, ``answer_command``, ``answer_claimant``).

A database of v7 opens: v8 adds the columns in place, and the records an old process wrote
owe nothing (NULL), so the platform's retry of such an id is a plain ``duplicate``.
"""

from __future__ import annotations

import sqlite3

import tidings
from tidings.channels import ChannelConfig, Inbound
from tidings.store import SCHEMA_VERSION
from tidings.store._schema import MIGRATIONS
from tidings.testing import MemoryChannel


async def test_a_database_of_schema_v7_opens_and_its_id_records_owe_nothing(
        db_path, workspace) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    for version, script in MIGRATIONS[:7]:
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {version}")
    # An old process's /clear with no session: its id recorded, its answer given or not.
    key = "ops:chat:c1"
    conn.execute("INSERT INTO client_messages (core_id, channel, conversation_key, client_id, "
                 "session_id, outcome, received_at) VALUES ('default', 'ops', ?, 'c1', NULL, "
                 "'command', 0)", (key,))
    conn.commit()
    conn.close()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = MemoryChannel(rt, ChannelConfig("ops", dedupe_message_ids=True))
        assert channel.conversation_for(Inbound(chat_id="c1", sender_id="u1",
                                                text="")).key == key
        assert await channel.say("/clear", chat_id="c1", sender_id="u1",
                                 message_id="c1") == "duplicate"
        assert channel.outbounds == []  # nothing owed, nothing run
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 10
        columns = [row[1] for row in conn.execute("PRAGMA table_info(client_messages)")]
        assert columns[-3:] == ["answer", "answer_command", "answer_claimant"]
        assert conn.execute("SELECT client_id, answer, answer_command, answer_claimant "
                            "FROM client_messages").fetchall() == [("c1", None, None, None)]
    finally:
        conn.close()
