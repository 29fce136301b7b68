"""A read function that ends its read transaction itself (``conn.commit()`` out of sqlite3
habit, where nothing needs committing) gets its result back, and the pool keeps its connection.

The pool's closing ``ROLLBACK`` then found no transaction and raised: the read's result was
replaced by "StoreError: OperationalError: cannot rollback - no transaction is active", and the
warm connection was closed as if it were broken.
"""

from __future__ import annotations

import sqlite3

from tidings.store import open_store


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
