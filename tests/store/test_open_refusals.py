"""A database the store must not write to is refused before anything is written to it."""

from __future__ import annotations

import hashlib
import pathlib
import sqlite3

import pytest

from tidings.errors import SchemaVersionError, StoreError
from tidings.store import SCHEMA_VERSION, prepare_store, read_database, status_report


def _digests(directory: pathlib.Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir())}


def _foreign(db: pathlib.Path, user_version: int = 0) -> None:
    """Another program's database (rollback journal, its own table)."""
    db.parent.mkdir(exist_ok=True)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("CREATE TABLE notes (body TEXT)")
        conn.execute("INSERT INTO notes VALUES ('keep me')")
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.close()


async def test_another_programs_database_is_refused_and_left_as_it_was(tmp_path) -> None:
    db = tmp_path / "app" / "app.db"
    _foreign(db)
    before = _digests(db.parent)
    with pytest.raises(StoreError, match="not a tidings database") as caught:
        await prepare_store(db)
    assert str(db) in str(caught.value)
    assert _digests(db.parent) == before  # no tidings tables, no switch to WAL, no -wal file


async def test_a_newer_database_is_refused_before_anything_is_written(tmp_path) -> None:
    db = tmp_path / "newer" / "tidings.db"
    _foreign(db, user_version=SCHEMA_VERSION + 1)
    before = _digests(db.parent)
    with pytest.raises(SchemaVersionError, match="newer than this tidings"):
        await prepare_store(db)
    assert _digests(db.parent) == before


async def test_an_empty_file_and_an_empty_database_become_tidings_databases(tmp_path) -> None:
    empty_file = tmp_path / "zero.db"
    empty_file.touch()
    empty_db = tmp_path / "empty.db"
    sqlite3.connect(empty_db).close()
    for db in (empty_file, empty_db):
        store = await prepare_store(db)
        store.close()
        conn = sqlite3.connect(db)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        conn.close()


async def test_a_database_with_a_negative_schema_version_is_refused_and_left_as_it_was(
        tmp_path) -> None:
    # user_version is a signed integer: another program may set -1. Only 0 was taken for "no
    # tidings version", so such a database, tables and all, was migrated: every tidings table
    # created among its own and its version overwritten with tidings'.
    db = tmp_path / "app" / "app.db"
    _foreign(db, user_version=-1)
    before = _digests(db.parent)
    with pytest.raises(StoreError, match="not a tidings database") as caught:
        await prepare_store(db)
    assert str(db) in str(caught.value)
    assert _digests(db.parent) == before


@pytest.mark.parametrize("user_version", [1, 2, SCHEMA_VERSION])
async def test_another_programs_database_with_a_schema_version_of_ours_is_refused(
        tmp_path, user_version) -> None:
    """Many programs number their own schema with user_version: one at 1 was taken for a
    tidings v1 database, and migrated (a client_messages table written into it, its version
    overwritten with 2) until a later step failed on a table it lacked ('no such table:
    main.turns'); at any version it was switched to WAL first. Refused as another program's
    now, by its missing tidings tables, before anything is written; tidings status says the
    same of it."""
    db = tmp_path / "app" / "app.db"
    _foreign(db, user_version=user_version)
    before = _digests(db.parent)
    with pytest.raises(StoreError, match="not a tidings database") as caught:
        await prepare_store(db)
    assert str(db) in str(caught.value)
    assert _digests(db.parent) == before
    with pytest.raises(StoreError, match="not a tidings database"):
        read_database(db, status_report)
    assert _digests(db.parent) == before


@pytest.mark.parametrize("tail", ["", "tidings.db"], ids=["the-file", "a-folder"])
async def test_a_path_through_a_symbolic_link_loop_is_a_store_error_naming_it(
        tmp_path, tail) -> None:
    """pathlib raised a bare RuntimeError ('Symlink loop from ...') out of open_store and
    prepare_store, where a path they cannot use is a StoreError naming it (open_runtime
    refuses one by name before): a host catching StoreError around its open did not catch
    it. Refused as StoreError naming the path, nothing created."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    db = tmp_path / "a" / tail if tail else tmp_path / "a"
    before = sorted(path.name for path in tmp_path.iterdir())
    with pytest.raises(StoreError, match="cannot open the database") as caught:
        await prepare_store(db)
    assert str(db) in str(caught.value)
    assert "loop" in str(caught.value).lower()
    assert sorted(path.name for path in tmp_path.iterdir()) == before
