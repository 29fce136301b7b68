"""ReadPool.close() against reads in flight: no connection stays open, no new one is opened."""

from __future__ import annotations

import collections
import pathlib
import sqlite3
import threading

import pytest
import trio
import trio.testing

from tidings.store._errors import StoreClosedError, StoreError
from tidings.store._reader import ReadPool


def _database(tmp_path: pathlib.Path) -> pathlib.Path:
    db = tmp_path / "t.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    return db


class _GatedIdle(collections.deque):
    """The pool's idle deque, holding a returning worker thread just before it appends."""

    def __init__(self) -> None:
        super().__init__()
        self.reached = threading.Event()
        self.release = threading.Event()

    def append(self, conn: sqlite3.Connection) -> None:
        self.reached.set()
        assert self.release.wait(10)
        super().append(conn)


def _closed(conn: sqlite3.Connection) -> bool:
    try:
        conn.execute("SELECT 1")
    except sqlite3.ProgrammingError:
        return True
    return False


async def test_close_while_a_read_returns_its_connection_leaves_none_open(tmp_path):
    pool = ReadPool(_database(tmp_path))
    idle = pool._idle = _GatedIdle()
    used: list[sqlite3.Connection] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pool.run, lambda conn: used.append(conn))
        assert await trio.to_thread.run_sync(idle.reached.wait, 10)
        pool.close()  # it finds the pool empty: the connection is on its way back
        idle.release.set()
    assert len(used) == 1
    assert _closed(used[0])
    assert list(pool._idle) == []
    with pytest.raises(StoreClosedError):
        await pool.run(lambda conn: None)


async def test_a_read_waiting_for_a_thread_when_the_pool_closes_opens_nothing(tmp_path):
    pool = ReadPool(_database(tmp_path), size=1)
    holding, release = threading.Event(), threading.Event()
    opened: list[sqlite3.Connection] = []

    def hold(conn: sqlite3.Connection) -> str:
        holding.set()
        assert release.wait(10)
        return "first"

    async def second() -> None:
        with pytest.raises(StoreClosedError):
            await pool.run(opened.append)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pool.run, hold)
        assert await trio.to_thread.run_sync(holding.wait, 10)
        nursery.start_soon(second)
        await trio.testing.wait_all_tasks_blocked()  # it waits for the pool's only thread
        pool.close()
        release.set()
    assert opened == []


async def test_a_read_that_cannot_open_a_connection_fails_with_a_store_error(tmp_path):
    db = _database(tmp_path)
    pool = ReadPool(db)
    db.unlink()  # gone while the store runs: the pool has no connection yet to reuse
    with pytest.raises(StoreError, match="unable to open database file") as caught:
        await pool.run(lambda conn: None)
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    pool.close()
