"""Opening a store: file modes, WAL and durability settings, schema versions."""

from __future__ import annotations

import sqlite3
import stat

import pytest
import trio

from tidings.errors import SchemaVersionError, StoreClosedError, StoreError
from tidings.store import SCHEMA_VERSION, Call, open_store, prepare_store


def _mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_database_directory_is_0700_and_files_are_0600(tmp_path) -> None:
    db = tmp_path / "state" / "deep" / "tidings.db"
    async with open_store(db) as store:
        await store.commit([Call(lambda c: c.execute("CREATE TABLE t (x)"))])
        assert _mode(db.parent) == 0o700
        assert _mode(tmp_path / "state") == 0o700
        for suffix in ("", "-wal", "-shm"):
            assert _mode(db.with_name(db.name + suffix)) == 0o600


async def test_writer_uses_wal_and_full_sync_by_default(tmp_path) -> None:
    async with open_store(tmp_path / "a.db") as store:
        (journal, sync) = (await store.commit([
            Call(lambda c: c.execute("PRAGMA journal_mode").fetchone()[0]),
            Call(lambda c: c.execute("PRAGMA synchronous").fetchone()[0]),
        ]))
    assert journal == "wal"
    assert sync == 2  # FULL


async def test_synchronous_normal_is_configurable(tmp_path) -> None:
    async with open_store(tmp_path / "a.db", synchronous="NORMAL") as store:
        [sync] = await store.commit([Call(lambda c: c.execute("PRAGMA synchronous").fetchone()[0])])
    assert sync == 1


async def test_bad_synchronous_value_names_the_field(tmp_path) -> None:
    with pytest.raises(ValueError, match="synchronous"):
        async with open_store(tmp_path / "a.db", synchronous="OFF"):  # type: ignore[arg-type]
            pass


async def test_schema_is_created_at_the_current_version_with_every_table(tmp_path) -> None:
    db = tmp_path / "a.db"
    async with open_store(db):
        pass
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    names = {row[0] for row in conn.execute("SELECT name FROM sqlite_master")}
    assert {"sessions", "turns", "messages", "outbox", "work_items", "artifacts",
            "conversation_bindings", "events", "delivery_lifecycle"} <= names


async def test_reopening_does_not_migrate_again_and_gives_a_new_epoch(tmp_path) -> None:
    db = tmp_path / "a.db"
    first = await prepare_store(db)
    first.close()
    second = await prepare_store(db)
    second.close()
    assert second.epoch == first.epoch + 1
    assert second.claimant == f"epoch:{second.epoch}"


async def test_a_database_newer_than_the_code_is_refused_clearly(tmp_path) -> None:
    db = tmp_path / "a.db"
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(SchemaVersionError, match="newer than this tidings"):
        await prepare_store(db)


async def test_events_are_append_only(tmp_path) -> None:
    async with open_store(tmp_path / "a.db") as store:
        await store.commit([Call(lambda c: c.execute(
            "INSERT INTO events (type, created_at) VALUES ('x', 1.0)"))])
        with pytest.raises(StoreError, match="append-only"):
            await store.commit([Call(lambda c: c.execute("UPDATE events SET type = 'y'"))])
        with pytest.raises(StoreError, match="append-only"):
            await store.commit([Call(lambda c: c.execute("DELETE FROM events"))])


async def test_reads_see_committed_writes_and_fail_once_closed(tmp_path) -> None:
    async with open_store(tmp_path / "a.db") as store:
        await store.commit([Call(lambda c: c.execute(
            "INSERT INTO events (type, created_at) VALUES ('x', 1.0)"))])
        count = await store.read(lambda c: c.execute("SELECT count(*) FROM events").fetchone()[0])
        assert count == 1
        with pytest.raises(StoreError, match="readonly"):
            await store.read(lambda c: c.execute("INSERT INTO events (type) VALUES ('z')"))
    with pytest.raises(StoreClosedError):
        await store.read(lambda c: None)
    with pytest.raises(StoreClosedError):
        await store.commit([])


async def test_reads_run_in_worker_threads(tmp_path) -> None:
    import threading

    async with open_store(tmp_path / "a.db") as store:
        ident = await store.read(lambda c: threading.get_ident())
    assert ident != threading.get_ident()
    await trio.lowlevel.checkpoint()
