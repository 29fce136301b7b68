"""A stopped runtime's database file holds every commit: copied alone (a backup, a move to
another machine), it is the whole database."""

from __future__ import annotations

import shutil
import threading

import pytest
import trio

import tidings
from tidings.store import delivery_report, read_database, status_counts


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_a_stopped_runtimes_database_file_holds_every_commit(
        db_path, workspace, writer) -> None:
    # The writer's connection closed while the read pool's were open, so SQLite did not
    # checkpoint; the pool's read-only connections, closed last, cannot. The last commits
    # stayed in the -wal file beside it, and a copy of the database file alone lost them.
    async with tidings.open_runtime(db_path, workspace=workspace, writer=writer) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("last words")
    copy = workspace / "copy.db"
    shutil.copyfile(db_path, copy)  # the file alone
    report = read_database(copy, delivery_report, handle.delivery_id)
    assert report is not None
    assert report.delivery.text == "last words"
    assert read_database(copy, status_counts) == read_database(db_path, status_counts)


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_a_read_in_flight_at_the_stop_does_not_keep_the_last_commits_out_of_the_file(
        db_path, workspace, writer) -> None:
    """The writer's checkpoint at its close copies the log only up to the oldest snapshot a
    reader still holds: a read in flight (a host's rt.deliveries() over a large outbox,
    begun before the last sends) kept those sends in the -wal file, and nothing checkpointed
    after it ended (the pool's connections are read-only). The file alone lacked them."""
    began, gate = threading.Event(), threading.Event()

    def slow_read(conn) -> None:
        conn.execute("SELECT count(*) FROM outbox").fetchone()  # its snapshot: before the send
        began.set()
        assert gate.wait(10)

    async with trio.open_nursery() as nursery:
        async with tidings.open_runtime(db_path, workspace=workspace, writer=writer) as rt:
            session_id = await rt.create_session(channel="web")
            nursery.start_soon(rt.store.read, slow_read)
            assert await trio.to_thread.run_sync(began.wait, 10)
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_text("last words")
        gate.set()  # the read ends after the runtime has stopped
    copy = workspace / "copy.db"
    shutil.copyfile(db_path, copy)  # the file alone
    report = read_database(copy, delivery_report, handle.delivery_id)
    assert report is not None
    assert report.delivery.text == "last words"
