"""A write-ahead log left without its database file (a crash, then the database file moved
or removed: a backup copied off, a reset that forgot the log) holds commits the file does not:
opening the path must refuse, not start a new database over it."""

from __future__ import annotations

import hashlib
import pathlib
import sys
import textwrap

import pytest
import trio

import tidings
from tidings.errors import StoreError
from tidings.store import delivery_report, read_database

CHILD = textwrap.dedent("""
    import os, signal, sys, trio, tidings
    from tidings.testing import MemoryRoute

    async def main(path, workspace):
        async with tidings.open_runtime(path, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, MemoryRoute())
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_text("kept in the log")
                assert await handle.wait() == "delivered"
            print(handle.delivery_id, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)  # no stop: no checkpoint into the file

    trio.run(main, sys.argv[1], sys.argv[2])
""")


def _digests(directory: pathlib.Path) -> dict[str, str]:
    """The files in *directory* by content, but for the runtime lock's (left by the killed
    process; each opener writes its pid in it)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir()) if not p.name.endswith(".runtime.lock")}


@pytest.mark.parametrize("left", ["no file", "an empty file"])
async def test_a_log_without_its_database_is_refused_and_left_as_it_was(tmp_path, workspace,
                                                                       left) -> None:
    """SQLite takes the log of a missing or empty database file for stale and deletes it: the
    runtime opened a new, empty database there, and every commit of the killed process that
    was only in the log (here all its deliveries) was gone for good, the file moved away
    lacking them too."""
    state = tmp_path / "state"
    db = state / "tidings.db"
    child = await trio.run_process([sys.executable, "-c", CHILD, str(db), str(workspace)],
                                   capture_stdout=True, check=False)
    delivery_id = child.stdout.decode().strip()
    assert delivery_id
    moved = tmp_path / "moved.db"
    db.rename(moved)
    assert read_database(moved, delivery_report, delivery_id) is None  # only the log has it
    if left == "an empty file":
        db.touch()
    before = _digests(state)
    assert (state / "tidings.db-wal").stat().st_size > 0
    with pytest.raises(StoreError, match="write-ahead log") as caught:
        async with tidings.open_runtime(db, workspace=workspace):
            pass
    assert str(db) in str(caught.value)
    assert _digests(state) == before  # no database made, the log kept
    # the file put back, the log completes it: nothing was lost
    moved.replace(db)
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        assert (await rt.delivery_status(delivery_id)).text == "kept in the log"


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_after_a_clean_stop_the_database_file_removed_starts_anew(tmp_path, workspace,
                                                                        writer) -> None:
    """A stop copies the log into the file (close_writer), so the log holds nothing the file
    lacks: it must not be taken for a crashed database's. It was left at full length (its
    frames copied, but the file not emptied: the read pool's connections, closed last, may
    not), so removing the database file to start anew was refused as if commits were lost."""
    db = tmp_path / "tidings.db"
    async with tidings.open_runtime(db, workspace=workspace, writer=writer) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            await ctx.output.send_text("before the reset")
        assert await rt.deliveries()  # the pool has read: its connections close last
    db.unlink()
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        assert await rt.deliveries() == []
