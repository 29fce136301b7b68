"""ReadPool.wait_idle(): returns only once the reads started before it have ended, those still
waiting for a thread included (a task waiting for a read looks blocked to trio)."""

from __future__ import annotations

import pathlib
import sqlite3
import threading

import trio
import trio.testing

from tidings.store._reader import ReadPool


def _database(tmp_path: pathlib.Path) -> pathlib.Path:
    db = tmp_path / "t.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    return db


def _gated(started: threading.Event, release: threading.Event):
    def read(conn: sqlite3.Connection) -> int:
        started.set()
        assert release.wait(10)
        return conn.execute("SELECT count(*) FROM t").fetchone()[0]
    return read


async def test_wait_idle_returns_at_once_with_no_read_in_flight(tmp_path: pathlib.Path) -> None:
    pool = ReadPool(_database(tmp_path), size=2)
    with trio.fail_after(5):
        await pool.wait_idle()
    assert await pool.run(lambda conn: conn.execute("SELECT 1").fetchone()[0]) == 1
    pool.close()


async def test_wait_idle_waits_for_reads_running_and_waiting_for_a_thread(
        tmp_path: pathlib.Path) -> None:
    pool = ReadPool(_database(tmp_path), size=1)
    started, release = threading.Event(), threading.Event()
    answers: list[object] = []
    idle = trio.Event()

    async def reader(fn) -> None:
        answers.append(await pool.run(fn))

    async def waiter() -> None:
        await pool.wait_idle()
        idle.set()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader, _gated(started, release))
        await trio.to_thread.run_sync(started.wait)  # the first read runs in its thread
        nursery.start_soon(reader, lambda conn: "second")  # waits for the one thread
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(waiter)
        await trio.testing.wait_all_tasks_blocked()
        assert not idle.is_set()  # the first read still runs
        assert answers == []
        release.set()
        with trio.fail_after(5):
            await idle.wait()
        # Both reads ended before wait_idle returned: their tasks have their answers once
        # they run, with nothing left in a thread.
        await trio.testing.wait_all_tasks_blocked()
        assert sorted(map(str, answers)) == ["0", "second"]
    pool.close()
