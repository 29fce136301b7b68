"""Schema v7: a held row may be a session command's answer (``inbound_messages.command``).

A database of v6 (holds of messages only) opens: v7 adds the column in place, and what the
old process held is a message still, told "not answered" at the next start as before.
"""

from __future__ import annotations

import sqlite3

import trio

import tidings
from tidings.store import SCHEMA_VERSION
from tidings.store._schema import MIGRATIONS
from tidings.testing import MemoryRoute


async def test_a_database_of_schema_v6_opens_and_its_holds_are_messages(
        db_path, workspace) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    for version, script in MIGRATIONS[:6]:
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO sessions (session_id, core_id, channel, created_at, updated_at) "
                 "VALUES ('old_session', 'default', 'web', 0, 0)")
    conn.execute("INSERT INTO process_epochs (pid, hostname, started_at) "
                 "VALUES (1, 'old', 0)")  # epoch 1: the process that held it
    conn.execute("INSERT INTO inbound_messages (inbound_id, session_id, channel, message_id, "
                 "notice, claimant, received_at) VALUES ('inbound_old', 'old_session', 'web', "
                 "'m1', 'Not answered: hello', 'epoch:1', 0)")
    conn.commit()
    conn.close()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        route = MemoryRoute()
        rt.router.bind("old_session", route)
        report = await rt.recover()
        with trio.fail_after(10):
            [notice] = await route.wait_delivered(1)
    assert report.unanswered == 1
    assert notice.text == "Not answered: hello"
    assert dict(notice.metadata) == {"unanswered": True, "message_ids": ("m1",)}
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT count(*) FROM inbound_messages").fetchone() == (0,)
        columns = [row[1] for row in conn.execute("PRAGMA table_info(inbound_messages)")]
        assert columns[-1] == "command"
    finally:
        conn.close()
