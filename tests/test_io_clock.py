"""The I/O tests' clock (tests/conftest.py ``autojump_clock``): it does not jump while tidings'
own SQLite work is in flight, and still jumps when the code only waits on a timer."""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time

import pytest
import trio
import trio.testing

from tidings.store import Execute, InsertRows, open_store
from tidings.testing import writer_gate

from .io_clock import IO_AUTOJUMP_THRESHOLD, STUCK_AFTER, guard_of, io_clock

SLOW = 0.2
"""Real seconds a slow store operation takes here: four times the autojump threshold."""


def _slow_read(conn: sqlite3.Connection) -> int:
    time.sleep(SLOW)  # the very thing under test: SQLite work that outlasts the threshold
    return conn.execute("SELECT 1").fetchone()[0]


async def test_no_jump_while_a_store_read_runs_in_a_thread(tmp_path, autojump_clock) -> None:
    async with open_store(tmp_path / "a.db") as store:
        start = trio.current_time()
        with trio.fail_after(60):  # the guard a false jump would fire
            assert await store.read(_slow_read) == 1
        assert trio.current_time() == start


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_no_jump_while_a_commit_waits_for_a_lock(tmp_path, autojump_clock, writer) -> None:
    """A commit that waits on SQLite's busy timeout (another connection holds the write lock
    for SLOW real seconds), in the writer's thread or in the writer process."""
    async with open_store(tmp_path / "a.db", writer=writer) as store:
        await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
        holder = sqlite3.connect(tmp_path / "a.db", check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        release = threading.Timer(SLOW, holder.rollback)
        release.start()
        try:
            start = trio.current_time()
            with trio.fail_after(60):
                await store.commit([InsertRows("kv", ("k", "v"), (("a", "b"),))])
            assert trio.current_time() == start
        finally:
            release.join()
            holder.close()


def test_a_plain_autojump_clock_jumps_during_that_read(tmp_path) -> None:
    """Why the clock above: with trio's MockClock alone, time jumps to the guard's deadline
    during the same slow read (the guard's cancel then waits for the thread to return)."""

    async def main() -> float:
        async with open_store(tmp_path / "a.db") as store:
            start = trio.current_time()
            with trio.move_on_after(60):
                await store.read(_slow_read)
            return trio.current_time() - start

    clock = trio.testing.MockClock(autojump_threshold=IO_AUTOJUMP_THRESHOLD)
    assert trio.run(main, clock=clock) == pytest.approx(60)


async def test_the_clock_still_jumps_while_only_timers_are_pending(
        tmp_path, autojump_clock) -> None:
    """The store is open and idle: a sleep of an hour is over at once, through the hook this
    clock puts in trio's run loop (MockClock._autojump: if trio renames it, this fails)."""
    assert callable(vars(trio.testing.MockClock).get("_autojump")), "trio renamed its hook"
    guard = guard_of(autojump_clock)
    async with open_store(tmp_path / "a.db") as store:
        await store.commit([Execute("SELECT 1")])
        real = time.perf_counter()
        start = trio.current_time()
        await trio.sleep(3600)
        assert trio.current_time() - start == pytest.approx(3600)
        assert time.perf_counter() - real < guard.stuck_after / 2
    assert guard.asked >= 1


def test_a_store_thread_that_stays_stuck_still_trips_the_guard(tmp_path) -> None:
    """Work in flight holds the clock for ``stuck_after`` real seconds, not for ever."""
    clock = io_clock(stuck_after=0.3)
    stuck = threading.Event()

    def stuck_read(conn: sqlite3.Connection) -> None:
        stuck.wait(30)  # released below, once the guard has fired

    async def main() -> float:
        async with open_store(tmp_path / "a.db") as store, trio.open_nursery() as nursery:
            nursery.start_soon(store.read, stuck_read)
            real = time.perf_counter()
            with trio.move_on_after(60) as hang_guard:
                await trio.sleep_forever()
            held = time.perf_counter() - real
            stuck.set()
            assert hang_guard.cancelled_caught
            return held

    held = trio.run(main, clock=clock)
    assert held >= 0.3
    assert guard_of(clock).forced >= 1
    assert held < STUCK_AFTER  # the bound given to io_clock, not the default


async def test_a_stopped_writer_process_does_not_hold_the_clock(tmp_path, autojump_clock) -> None:
    """A batch held by a writer process that a test stopped (SIGSTOP) is no work in flight:
    the clock jumps at once, as tests of a stuck child expect."""
    guard = guard_of(autojump_clock)
    async with open_store(tmp_path / "a.db", writer="process") as store:
        await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
        pid = store.writer.process_id
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        await trio.to_thread.run_sync(os.waitid, os.P_PID, pid, os.WSTOPPED | os.WNOWAIT)
        try:
            committed = trio.Event()

            async def insert() -> None:
                await store.commit([InsertRows("kv", ("k", "v"), (("a", "b"),))])
                committed.set()

            async with trio.open_nursery() as nursery:
                nursery.start_soon(insert)
                await trio.testing.wait_all_tasks_blocked()  # sent: the child holds it
                real = time.perf_counter()
                await trio.sleep(60)
                assert time.perf_counter() - real < guard.stuck_after / 2
                assert guard.forced == 0
                assert not committed.is_set()
                os.kill(pid, signal.SIGCONT)
            assert committed.is_set()
        finally:
            os.kill(pid, signal.SIGCONT)


async def test_a_writer_held_in_a_gate_does_not_hold_the_clock(tmp_path, autojump_clock) -> None:
    """writer_gate holds the writer's thread on purpose: no work in flight, the clock jumps."""
    guard = guard_of(autojump_clock)
    async with open_store(tmp_path / "a.db") as store, writer_gate(store) as gate:
        real = time.perf_counter()
        start = trio.current_time()
        await trio.sleep(60)
        assert trio.current_time() - start == pytest.approx(60)
        assert time.perf_counter() - real < guard.stuck_after / 2
        assert guard.held == guard.forced == 0
        gate.release()
