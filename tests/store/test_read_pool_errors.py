"""A read that raises (a bad argument refused inside it) leaves the pool's connection usable:
the pool keeps it, rather than closing it and opening another for the next read."""

from __future__ import annotations

import sqlite3

import pytest

import tidings
from tidings.errors import StoreError, ValidationError
from tidings.store import OUTBOX_STATUSES, open_store


async def test_bad_filters_do_not_cost_the_pool_its_connection(db_path, workspace) -> None:
    # A status filter is checked inside the read (in one snapshot with the query); the pool
    # closed its warm connection (page cache and all) on every such refusal, so a dashboard
    # polling with a bad filter opened and closed a connection per call.
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        first = await rt.store.read(lambda conn: conn)
        for kwargs in ({"status": "Sent"}, {"since": float("nan")}, {"limit": -1}):
            with pytest.raises(ValidationError):
                await rt.recent_deliveries(**kwargs)
        assert await rt.store.read(lambda conn: conn) is first
        assert await rt.status_counts() == dict.fromkeys(OUTBOX_STATUSES, 0)


async def test_a_read_that_fails_in_sqlite_still_gets_a_fresh_connection(tmp_path) -> None:
    # A driver error may mean the connection itself is bad: that one is not kept.
    async with open_store(tmp_path / "a.db", readers=1) as store:
        first = await store.read(lambda conn: conn)
        with pytest.raises(StoreError):
            await store.read(lambda conn: conn.execute("SELECT * FROM no_such_table"))
        second = await store.read(lambda conn: conn)
        assert second is not first
        with pytest.raises(sqlite3.ProgrammingError):  # closed
            first.execute("SELECT 1")
        assert not second.in_transaction
