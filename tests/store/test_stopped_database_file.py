"""A stopped runtime's database file holds every commit: copied alone (a backup, a move to
another machine), it is the whole database."""

from __future__ import annotations

import shutil

import pytest

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
