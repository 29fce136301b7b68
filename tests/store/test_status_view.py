"""The operator's status view, on a live runtime and on a database nobody has open."""

from __future__ import annotations

import hashlib
import pathlib
import sqlite3

import pytest

import tidings
from tidings.errors import (
    DatabaseNotFoundError,
    DeliveryNotFoundError,
    SchemaVersionError,
    StoreError,
    ValidationError,
)
from tidings.store import (
    OUTBOX_STATUSES,
    delivery_report,
    open_store,
    prune_file,
    read_database,
    recent_deliveries,
    status_counts,
    status_report,
)
from tidings.testing import MemoryRoute


@pytest.fixture
def db(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "state" / "tidings.db"


async def _populate(db: pathlib.Path, workspace: pathlib.Path, clock: list[float]) -> dict:
    """Two sessions: a sent, a failed and an unrouted delivery, and one left ``sending``."""
    ok, broken, stuck = MemoryRoute(), MemoryRoute(fail=RuntimeError("nope")), MemoryRoute()
    stuck.stall()
    async with tidings.open_runtime(db, workspace=workspace, grace=0,
                                    clock=lambda: clock[0]) as rt:
        a = await rt.create_session(channel="web")
        b = await rt.create_session(channel="web")
        rt.router.bind(a, ok)
        async with rt.open_turn(a) as ctx:
            sent = await ctx.output.send_text("one")
            assert await sent.wait() == "delivered"
            clock[0] += 10
            rt.router.bind(a, broken)
            failed = await ctx.output.send_text("two")
            assert await failed.wait() == "failed"
        clock[0] += 10
        async with rt.open_turn(b) as ctx:
            unrouted = await ctx.output.send_text("three")
            assert await unrouted.wait() == "unrouted"
            clock[0] += 10
            rt.router.bind(b, stuck)
            sending = await ctx.output.send_text("four")
            await stuck.wait_attempted(1)
    return {"a": a, "b": b, "sent": sent.delivery_id, "failed": failed.delivery_id,
            "unrouted": unrouted.delivery_id, "sending": sending.delivery_id}


async def test_counts_list_every_status_and_recent_rows_come_newest_first(db, workspace) -> None:
    ids = await _populate(db, workspace, [1_000.0])
    report = read_database(db, status_report, limit=3)
    assert list(report.counts) == list(OUTBOX_STATUSES)
    # nobody recovered yet: the row left `sending` by a process that is still the latest epoch
    assert report.counts == {"queued": 0, "sending": 1, "sent": 1, "failed": 1, "unknown": 0,
                             "unrouted": 1}
    assert [row.delivery_id for row in report.recent] == [ids["sending"], ids["unrouted"],
                                                          ids["failed"]]
    assert report.as_json()["recent"][0] == {
        "delivery_id": ids["sending"], "session_id": ids["b"], "status": "sending",
        "attempts": 1, "last_error": None, "updated_at": 1_030.0}


async def test_filters_by_session_status_and_since(db, workspace) -> None:
    ids = await _populate(db, workspace, [1_000.0])
    only_a = read_database(db, status_counts, session_id=ids["a"])
    assert only_a == {"queued": 0, "sending": 0, "sent": 1, "failed": 1, "unknown": 0,
                      "unrouted": 0}
    failed = read_database(db, recent_deliveries, status="failed")
    assert [(row.delivery_id, row.last_error) for row in failed] == [
        (ids["failed"], "RuntimeError: nope")]
    recent = read_database(db, recent_deliveries, since=1_015.0, limit=None)
    assert {row.delivery_id for row in recent} == {ids["unrouted"], ids["sending"]}
    report = read_database(db, status_report, status="sent", since=1_015.0)
    assert report.recent == ()
    assert sum(report.counts.values()) == 2  # the status filter narrows only the rows


async def test_a_sending_row_of_a_process_that_is_no_longer_the_latest_reads_unknown(
        db, workspace) -> None:
    ids = await _populate(db, workspace, [1_000.0])
    async with open_store(db):  # a newer process epoch, which has not recovered anything
        counts = read_database(db, status_counts)
        unknown = read_database(db, recent_deliveries, status="unknown")
        sending = read_database(db, recent_deliveries, status="sending")
    assert (counts["sending"], counts["unknown"]) == (0, 1)
    assert [(row.delivery_id, row.status, row.outbox_status) for row in unknown] == [
        (ids["sending"], "unknown", "sending")]
    assert sending == []


async def test_one_delivery_comes_with_its_event_history(db, workspace) -> None:
    ids = await _populate(db, workspace, [1_000.0])
    report = read_database(db, delivery_report, ids["failed"])
    assert report.delivery.status == "failed"
    assert [e.type for e in report.events] == ["delivery.queued", "delivery.sending",
                                               "delivery.failed"]
    as_json = report.as_json()
    assert as_json["delivery_id"] == ids["failed"]
    assert as_json["attempts"] == 1
    assert [e["type"] for e in as_json["events"]] == [e.type for e in report.events]
    assert read_database(db, delivery_report, "dlv_nope") is None


async def test_runtime_methods_show_the_same_view(db, workspace) -> None:
    ids = await _populate(db, workspace, [1_000.0])
    async with tidings.open_runtime(db, workspace=workspace, recover="manual") as rt:
        counts = await rt.status_counts()
        recent = await rt.recent_deliveries(status="unknown")
        report = await rt.status_report(session_id=ids["b"], limit=1)
        events = await rt.delivery_events(ids["sending"])
        with pytest.raises(DeliveryNotFoundError):
            await rt.delivery_events("dlv_nope")
        with pytest.raises(ValidationError) as caught:
            await rt.status_counts(since="yesterday")
    assert (counts["unknown"], counts["sending"]) == (1, 0)
    assert [row.delivery_id for row in recent] == [ids["sending"]]
    assert [row.delivery_id for row in report.recent] == [ids["sending"]]
    assert [e.type for e in events][-1] == "delivery.unknown"
    assert caught.value.field == "since"


@pytest.mark.parametrize(("kwargs", "field"), [({"status": "done"}, "status"),
                                               ({"limit": -1}, "limit"),
                                               ({"since": "1h"}, "since")])
async def test_bad_filters_are_refused_naming_the_field(db, workspace, kwargs, field) -> None:
    await _populate(db, workspace, [1_000.0])
    with pytest.raises(ValidationError) as caught:
        read_database(db, status_report, **kwargs)
    assert caught.value.field == field


def _snapshot(directory: pathlib.Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir())}


async def test_reading_a_closed_database_creates_and_writes_nothing(db, workspace) -> None:
    await _populate(db, workspace, [1_000.0])
    conn = sqlite3.connect(db)  # checkpoint and drop the -wal, as a clean shutdown would
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    before = _snapshot(db.parent)
    read_database(db, status_report)
    read_database(db, delivery_report, "dlv_nope")
    assert _snapshot(db.parent) == before
    assert "tidings.db-wal" not in before


async def test_reading_while_a_runtime_runs_sees_its_uncheckpointed_writes(db, workspace) -> None:
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("live")
        assert await handle.wait() == "unrouted"
        epochs = sqlite3.connect(db).execute("SELECT count(*) FROM process_epochs").fetchone()
        report = read_database(db, status_report)
        again = sqlite3.connect(db).execute("SELECT count(*) FROM process_epochs").fetchone()
    assert report.counts["unrouted"] == 1
    assert epochs == again  # the reader registered no epoch


def test_a_missing_database_is_an_error_and_is_not_created(tmp_path) -> None:
    missing = tmp_path / "nowhere" / "tidings.db"
    with pytest.raises(DatabaseNotFoundError, match="no database"):
        read_database(missing, status_report)
    assert not missing.exists()
    assert not missing.parent.exists()


def test_a_file_that_is_not_a_tidings_database_is_refused(tmp_path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("not sqlite at all " * 100)
    with pytest.raises(StoreError, match="not a tidings database"):
        read_database(text, status_report)
    empty = tmp_path / "empty.db"
    sqlite3.connect(empty).close()
    with pytest.raises(StoreError, match="no schema"):
        read_database(empty, status_report)


def test_a_database_from_a_newer_tidings_is_refused(tmp_path) -> None:
    newer = tmp_path / "newer.db"
    conn = sqlite3.connect(newer)
    conn.execute("PRAGMA user_version = 999")
    conn.close()
    with pytest.raises(SchemaVersionError, match="999"):
        read_database(newer, status_report)


@pytest.mark.parametrize("reading", ["read_database", "prune_file"])
def test_a_symbolic_link_loop_is_said_as_such_not_as_no_database(tmp_path, reading) -> None:
    """pathlib's is_file() and exists() answer False for a path the system will not look up
    (ELOOP), so a link loop where the database should be read 'no database at ...'
    (DatabaseNotFoundError: tidings status sent the user looking for a file) where README
    (Looking at it) says such a path is said as such. It is a StoreError with the system's
    reason, naming the path; a link to nothing is still no database."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    (tmp_path / "dangling").symlink_to("nowhere")
    run = {"read_database": lambda path: read_database(path, status_report),
           "prune_file": lambda path: prune_file(path, 0.0)}[reading]
    with pytest.raises(StoreError) as caught:
        run(tmp_path / "a")
    assert not isinstance(caught.value, DatabaseNotFoundError)
    assert str(tmp_path / "a") in str(caught.value)
    assert "symbolic links" in str(caught.value)
    with pytest.raises(DatabaseNotFoundError):
        run(tmp_path / "dangling")
