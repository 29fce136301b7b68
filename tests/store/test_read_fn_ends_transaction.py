"""A read function that ends its read transaction itself (``conn.commit()`` out of sqlite3
habit, where nothing needs committing) gets its result back, and the pool keeps its connection.

The pool's closing ``ROLLBACK`` then found no transaction and raised: the read's result was
replaced by "StoreError: OperationalError: cannot rollback - no transaction is active", and the
warm connection was closed as if it were broken.
"""

from __future__ import annotations

import sqlite3

from tidings.store import create_session, open_store, read_database


def _count_then_commit(conn: sqlite3.Connection) -> int:
    count = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
    conn.commit()
    return int(count)


async def test_a_read_that_commits_by_habit_returns_its_result(tmp_path) -> None:
    async with open_store(tmp_path / "a.db", readers=1) as store:
        first = await store.read(lambda conn: conn)
        assert await store.read(_count_then_commit) == 0
        assert await store.read(lambda conn: conn) is first
        assert not first.in_transaction


async def test_read_database_gives_such_a_read_its_result_too(tmp_path) -> None:
    """read_database (tidings status, a script's read of a stopped database, an event feed
    after its runtime closed) had the same closing ROLLBACK: its result was replaced by
    "StoreError: cannot read ...: cannot rollback - no transaction is active"."""
    db = tmp_path / "a.db"
    async with open_store(db) as store:
        await store.commit(create_session("s1", core_id="core", channel=None, now=1.0))
    assert read_database(db, _count_then_commit) == 1  # read immutable: no log
    async with open_store(db):
        assert read_database(db, _count_then_commit) == 1  # read through the log
