"""A statement that makes SQLite end the transaction by itself (a full disk, an interrupt)
must fail with that error, not with the rollback the store issued after it: in a batch
("no such savepoint") and in a migration ("cannot rollback - no transaction is active")."""

from __future__ import annotations

import pathlib
import sqlite3

from tidings.errors import StoreError
from tidings.store import InsertRows
from tidings.store._batch import execute_batch
from tidings.store._schema import SCHEMA_VERSION, migrate, schema_version


def _full_database(tmp_path: pathlib.Path) -> sqlite3.Connection:
    """A WAL database that can grow by one page: a large row fills it (SQLITE_FULL), and
    SQLite then rolls the whole transaction back, savepoints and all."""
    conn = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, data BLOB)")
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 1}")
    return conn


def _insert(key: int, size: int) -> list[InsertRows]:
    return [InsertRows("t", ("id", "data"), ((key, b"x" * size),))]


def test_a_full_disk_in_an_isolated_request_is_the_error_every_request_gets(tmp_path):
    conn = _full_database(tmp_path)
    outcome = execute_batch(conn, [_insert(1, 10), _insert(2, 100_000), _insert(3, 10)])
    assert outcome.merged is False
    assert outcome.results == [None, None, None]  # the full disk rolled back all three
    for error in outcome.errors:
        assert isinstance(error, StoreError)
        assert "full" in str(error), str(error)  # not "no such savepoint: request"
        assert isinstance(error.__cause__, sqlite3.OperationalError)
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 0


def test_the_writer_connection_works_after_a_full_disk(tmp_path):
    conn = _full_database(tmp_path)
    execute_batch(conn, [_insert(1, 10), _insert(2, 100_000)])
    outcome = execute_batch(conn, [_insert(4, 10), _insert(5, 10)])
    assert outcome.errors == [None, None]
    assert [row[0] for row in conn.execute("SELECT id FROM t ORDER BY id")] == [4, 5]


def test_an_interrupted_migration_fails_with_the_interrupt(tmp_path):
    """Interrupt the migration at many points: wherever the interrupt lands (SQLite ends the
    transaction on some statements, not on others) the error is the interrupt, and the
    connection is left holding no transaction."""
    outcomes = set()
    for at in range(1, 800, 7):  # past the last step of every migration (v8: some 650)
        db = tmp_path / f"m{at}.db"
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("PRAGMA journal_mode = WAL")
        calls = 0

        def interrupt_once(at: int = at) -> int:
            nonlocal calls
            calls += 1
            return int(calls == at)

        conn.set_progress_handler(interrupt_once, 10)
        error: sqlite3.OperationalError | None = None
        try:
            migrate(conn, str(db))
        except sqlite3.OperationalError as exc:
            error = exc
        if error is None:
            outcomes.add("migrated")
        else:
            assert str(error) == "interrupted", f"interrupt at {at}: {error}"
            assert not conn.in_transaction
            outcomes.add("interrupted")
        conn.set_progress_handler(None, 0)
        assert schema_version(conn) in (0, *range(1, SCHEMA_VERSION + 1))
        conn.close()
    assert outcomes == {"interrupted", "migrated"}
