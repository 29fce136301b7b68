"""read_database on a database with no log (read ``immutable``, without locks) while a runtime
opens it, writes and checkpoints: the read must not mix the file before and after."""

from __future__ import annotations

import itertools
import os
import pathlib
import sqlite3

import pytest

from tidings.errors import StoreError
from tidings.store._schema import MIGRATIONS
from tidings.store._status import read_database


def _closed_database(tmp_path: pathlib.Path) -> pathlib.Path:
    db = tmp_path / "t.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(MIGRATIONS[0][1])  # a tidings v1 database (read_database wants its
    conn.execute("CREATE TABLE a (x)")  # tables), with two of the test's own
    conn.execute("CREATE TABLE b (x)")
    conn.execute("PRAGMA user_version = 1")
    conn.close()  # the last connection: the log is checkpointed and deleted
    assert not (tmp_path / "t.db-wal").exists()
    os.utime(db, ns=(10**18, 10**18))  # last written long ago (coarse clocks cannot tie)
    return db


def _write_both_and_checkpoint(db: pathlib.Path, *, keep_open: bool) -> sqlite3.Connection:
    """What a runtime starting on *db* does: one transaction, then a checkpoint."""
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    writer.execute("INSERT INTO a VALUES (1)")
    writer.execute("INSERT INTO b VALUES (1)")
    writer.execute("COMMIT")
    writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    if not keep_open:
        writer.close()
    return writer


@pytest.mark.parametrize("keep_open", [False, True], ids=["started-and-stopped", "running"])
def test_a_runtime_writing_during_a_status_read_gives_no_torn_view(tmp_path, keep_open):
    db = _closed_database(tmp_path)
    writers: list[sqlite3.Connection] = []

    def counts(conn: sqlite3.Connection) -> tuple[int, int]:
        in_a = conn.execute("SELECT count(*) FROM a").fetchone()[0]
        if not writers:  # the first read only: the runtime starts in the middle of it
            writers.append(_write_both_and_checkpoint(db, keep_open=keep_open))
        in_b = conn.execute("SELECT count(*) FROM b").fetchone()[0]
        return in_a, in_b

    try:
        assert read_database(db, counts) == (1, 1)  # never (0, 1): one transaction, whole
    finally:
        writers[0].close()


def test_a_database_that_keeps_changing_is_refused_clearly(tmp_path):
    db = _closed_database(tmp_path)
    written_at = itertools.count(2 * 10**18, 10**9)

    def always_changed(conn: sqlite3.Connection) -> int:
        _write_both_and_checkpoint(db, keep_open=False)
        at = next(written_at)  # one second apart, however coarse the file system's clock
        os.utime(db, ns=(at, at))
        return conn.execute("SELECT count(*) FROM a").fetchone()[0]

    with pytest.raises(StoreError, match="kept changing while it was read"):
        read_database(db, always_changed)
