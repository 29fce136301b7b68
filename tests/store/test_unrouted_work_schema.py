"""Schema v9: the work items an older tidings wrote ``completed`` for ``unrouted`` deliveries
read ``unrouted`` (issue 3: never the word of a sent one).

A database of v8 opens: v9 corrects those work items in place, in its migration's
transaction, and only those (a sent delivery's stays ``completed``); it looks only at the
``unrouted`` rows (the ``outbox_unrouted`` partial index), never the whole outbox.
"""

from __future__ import annotations

import pathlib
import sqlite3

from tidings.store import (
    SCHEMA_VERSION,
    delivery_report,
    open_store,
    read_database,
    recent_deliveries,
)
from tidings.store._schema import MIGRATIONS, _statements

from ..database_template import fresh_database

# delivery id, session, seq, outbox status, work status as an older tidings wrote it
_OLD_ROWS = (
    ("d_lost", "s1", 1, "unrouted", "completed"),
    ("d_sent", "s1", 2, "sent", "completed"),
    ("d_failed", "s1", 3, "failed", "failed"),
    ("d_also_lost", "s2", 1, "unrouted", "completed"),
    ("d_unknown", "s2", 2, "unknown", "abandoned"),
)


def _v8_database(db_path: pathlib.Path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    for version, script in MIGRATIONS[:8]:
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {version}")
    for session_id in ("s1", "s2"):
        conn.execute("INSERT INTO sessions (session_id, core_id, last_seq, created_at, "
                     "updated_at) VALUES (?, 'default', 2, 0, 0)", (session_id,))
    for delivery_id, session_id, seq, status, work_status in _OLD_ROWS:
        conn.execute("INSERT INTO outbox (delivery_id, session_id, seq, work_id, kind, text, "
                     "blocks, metadata, visible, status, created_at, updated_at) "
                     "VALUES (?, ?, ?, ?, 'message', 'x', '[]', '{}', 1, ?, 0, 0)",
                     (delivery_id, session_id, seq, f"w_{delivery_id}", status))
        conn.execute("INSERT INTO work_items (work_id, kind, subject_id, status, created_at, "
                     "updated_at) VALUES (?, 'delivery.send', ?, ?, 0, 0)",
                     (f"w_{delivery_id}", delivery_id, work_status))
    conn.commit()
    conn.close()


def _work_statuses(db_path: pathlib.Path) -> dict[str, str]:
    conn = sqlite3.connect(db_path)
    try:
        return dict(conn.execute("SELECT subject_id, status FROM work_items"))
    finally:
        conn.close()


async def test_a_v8_databases_unrouted_work_items_read_unrouted_once_opened(db_path) -> None:
    _v8_database(db_path)
    async with open_store(db_path):
        pass
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 10
    finally:
        conn.close()
    assert _work_statuses(db_path) == {
        "d_lost": "unrouted", "d_sent": "completed", "d_failed": "failed",
        "d_also_lost": "unrouted", "d_unknown": "abandoned"}
    report = read_database(db_path, delivery_report, "d_lost")
    assert (report.delivery.status, report.delivery.work_status) == ("unrouted", "unrouted")


def test_the_v9_migration_reads_only_the_unrouted_rows(db_path) -> None:
    """Bounded on a large database: the update finds its rows through ``outbox_unrouted``
    and each work item by its key, scanning neither table."""
    db = fresh_database(db_path)
    [script] = [script for version, script in MIGRATIONS if version == 9]
    conn = sqlite3.connect(db)
    try:
        for statement in _statements(script):
            plan = [row[-1] for row in conn.execute(f"EXPLAIN QUERY PLAN {statement}")]
            assert any("outbox_unrouted" in step for step in plan), plan
            scans = [step for step in plan if step.startswith("SCAN")]
            # (a scan of the partial index reads only the unrouted rows)
            assert scans == ["SCAN outbox USING INDEX outbox_unrouted"], plan
    finally:
        conn.close()


def test_a_v8_database_read_as_it_is_says_unrouted_too(db_path) -> None:
    """Read-only readers do not migrate (``tidings status`` on a copy, or before a runtime of
    this version opened the file): they read the work item of an ``unrouted`` delivery as
    v9 would have written it, and leave the file at v8."""
    _v8_database(db_path)
    report = read_database(db_path, delivery_report, "d_lost")
    assert (report.delivery.status, report.delivery.work_status) == ("unrouted", "unrouted")
    assert read_database(db_path, delivery_report, "d_sent").delivery.work_status == "completed"
    recent = read_database(db_path, recent_deliveries, limit=None)
    assert {row.delivery_id: row.work_status for row in recent} == {
        "d_lost": "unrouted", "d_sent": "completed", "d_failed": "failed",
        "d_also_lost": "unrouted", "d_unknown": "abandoned"}
    recent = read_database(db_path, recent_deliveries, status="unrouted")
    assert {row.delivery_id: row.work_status for row in recent} == {
        "d_lost": "unrouted", "d_also_lost": "unrouted"}
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 8
    finally:
        conn.close()
    assert _work_statuses(db_path)["d_lost"] == "completed"  # nothing written
