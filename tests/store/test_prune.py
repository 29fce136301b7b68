"""Retention in the store: what one prune deletes, in chunks, and the event horizon (v5)."""

from __future__ import annotations

import pathlib
import sqlite3

import pytest

import tidings
from tidings.errors import EventsPrunedError, StoreError, ValidationError
from tidings.store import (
    MAX_INTEGER,
    SCHEMA_VERSION,
    Call,
    PruneReport,
    delivery_report,
    open_store,
    prune_call,
    prune_file,
    queries,
    read_database,
)
from tidings.store import _prune as prune_module
from tidings.store._schema import MIGRATIONS
from tidings.testing import MemoryRoute

from ..database_template import fresh_database


def _rows(db: pathlib.Path, sql: str, *params: object) -> list[tuple]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


async def _populate(db: pathlib.Path, workspace: pathlib.Path, clock: list[float]) -> dict:
    """At 1000 a sent row, at 1010 a failed one, at 1020 an unrouted one, at 1030 one left
    ``sending``; a client message id at 1000; and at 5000 another sent row."""
    ok, broken, stuck = MemoryRoute(), MemoryRoute(fail=RuntimeError("nope")), MemoryRoute()
    stuck.stall()
    async with tidings.open_runtime(db, workspace=workspace, grace=0,
                                    clock=lambda: clock[0]) as rt:
        a = await rt.create_session(channel="web")
        b = await rt.create_session(channel="web")
        rt.router.bind(a, ok)
        await rt.remember_client_message("web", "chat:1", "c1", session_id=a, outcome="x")
        async with rt.open_turn(a) as ctx:
            sent = await ctx.output.send_text("one", idempotency_key="k")
            assert await sent.wait() == "delivered"
            clock[0] += 10
            rt.router.bind(a, broken)
            failed = await ctx.output.send_text("two")
            assert await failed.wait() == "failed"
        clock[0] += 10
        async with rt.open_turn(b) as ctx:
            unrouted = await ctx.output.send_text("three")
            assert await unrouted.wait() == "unrouted"
        clock[0] = 5_000.0
        rt.router.bind(a, ok)
        async with rt.open_turn(a) as ctx:
            young = await ctx.output.send_text("five")
            assert await young.wait() == "delivered"
        clock[0] = 1_030.0
        rt.router.bind(b, stuck)
        async with rt.open_turn(b) as ctx:
            sending = await ctx.output.send_text("four")
            await stuck.wait_attempted(1)
    return {"a": a, "b": b, "sent": sent.delivery_id, "failed": failed.delivery_id,
            "unrouted": unrouted.delivery_id, "sending": sending.delivery_id,
            "young": young.delivery_id}


async def _prune(db: pathlib.Path, cutoff: float) -> tuple[PruneReport, list[PruneReport]]:
    """Prune *db* through a store's writer, a step per commit, each going on from the last
    one's ``swept_to`` as the runtime's do: the total and each step's."""
    total, steps, sweep_from = PruneReport(), [], 0
    async with open_store(db) as store:
        while True:
            [step] = await store.commit([prune_call(cutoff, sweep_from)])
            total = total + step.report
            steps.append(step.report)
            sweep_from = step.swept_to
            if not step.more:
                return total, steps


async def test_a_prune_deletes_old_final_deliveries_and_keeps_everything_else(
        db_path, workspace) -> None:
    ids = await _populate(db_path, workspace, [1_000.0])
    kept_reports = {name: read_database(db_path, delivery_report, ids[name])
                    for name in ("unrouted", "sending", "young")}
    history = _rows(db_path, "SELECT * FROM messages ORDER BY history_id")
    counts = {table: _rows(db_path, f"SELECT count(*) FROM {table}")[0][0]
              for table in ("sessions", "turns", "artifacts", "messages", "events")}
    assert counts["messages"] == 5
    stamps = [row[0] for row in _rows(db_path, "SELECT created_at FROM events")]
    assert 5_000.0 in stamps

    report, _ = await _prune(db_path, 2_000.0)

    assert (report.deliveries, report.work_items, report.client_messages) == (2, 2, 1)
    left = dict(_rows(db_path, "SELECT delivery_id, status FROM outbox"))
    assert left == {ids["unrouted"]: "unrouted", ids["sending"]: "sending",
                    ids["young"]: "sent"}
    # the work items of the kept rows stay, and say what is left of their work: an unrouted
    # delivery's is unrouted, not completed (a requeue gives it back)
    assert dict(_rows(db_path, "SELECT subject_id, status FROM work_items")) == {
        ids["unrouted"]: "unrouted", ids["sending"]: "claimed", ids["young"]: "completed"}
    for name in ("sent", "failed"):
        assert read_database(db_path, delivery_report, ids[name]) is None
        assert _rows(db_path, "SELECT 1 FROM events WHERE delivery_id = ?", ids[name]) == []
    for name, before in kept_reports.items():  # a delivery still there keeps all its events
        after = read_database(db_path, delivery_report, ids[name])
        assert after.events == before.events
        assert len(after.events) >= 2
        assert after.delivery.outbox_status == before.delivery.outbox_status
    assert _rows(db_path, "SELECT * FROM messages ORDER BY history_id") == history
    for table in ("sessions", "turns", "artifacts"):
        assert _rows(db_path, f"SELECT count(*) FROM {table}")[0][0] == counts[table]
    assert _rows(db_path, "SELECT count(*) FROM client_messages") == [(0,)]
    # the events older than the cutoff that no kept delivery owns went: those of the turns
    # and sessions (before 2000), and the two pruned deliveries'
    [(horizon,)] = _rows(db_path, "SELECT lowest_kept FROM event_horizon")
    assert horizon > 1
    gone = counts["events"] - _rows(db_path, "SELECT count(*) FROM events")[0][0]
    assert gone == report.events > 0
    below = _rows(db_path, "SELECT delivery_id FROM events WHERE event_seq < ? "
                           "AND created_at < 2000", horizon)
    assert below
    assert {row[0] for row in below} <= {ids["unrouted"], ids["sending"]}
    # the clock went back from 5000 to 1030: the horizon passed the events stamped 5000
    # (to the old ones after them), which stay until their own stamp is older than a cutoff
    assert _rows(db_path, "SELECT count(*) FROM events WHERE created_at = 5000") == \
        [(sum(1 for at in stamps if at == 5_000),)]


async def test_nothing_younger_than_the_cutoff_is_deleted(db_path, workspace) -> None:
    ids = await _populate(db_path, workspace, [1_000.0])
    events = _rows(db_path, "SELECT event_seq FROM events WHERE created_at >= 1005")
    report, _ = await _prune(db_path, 1_005.0)
    assert (report.deliveries, report.work_items, report.client_messages) == (1, 1, 1)
    assert read_database(db_path, delivery_report, ids["sent"]) is None
    assert read_database(db_path, delivery_report, ids["failed"]) is not None
    assert _rows(db_path, "SELECT event_seq FROM events WHERE created_at >= 1005") == events
    again, _ = await _prune(db_path, 1_005.0)
    assert again == PruneReport()


async def test_a_large_prune_goes_a_bounded_chunk_per_commit(db_path, workspace,
                                                             monkeypatch) -> None:
    ids = await _populate(db_path, workspace, [1_000.0])
    monkeypatch.setattr(prune_module, "DELIVERIES_PER_STEP", 1)
    monkeypatch.setattr(prune_module, "EVENTS_PER_STEP", 2)
    monkeypatch.setattr(prune_module, "CLIENT_MESSAGES_PER_STEP", 1)
    everything = _rows(db_path, "SELECT count(*) FROM events WHERE created_at < 6000 "
                                "AND delivery_id IS NULL")[0][0]
    report, steps = await _prune(db_path, 6_000.0)
    assert (report.deliveries, report.work_items, report.client_messages) == (3, 3, 1)
    assert len(steps) >= 4  # three deliveries, one a step, and a last step that finds none
    assert max(step.deliveries for step in steps) == 1
    assert max(step.client_messages for step in steps) == 1
    assert {row[0] for row in _rows(db_path, "SELECT delivery_id FROM outbox")} == {
        ids["unrouted"], ids["sending"]}
    # every event older than the cutoff went but the newest (seqs are never given twice) and
    # those of the deliveries still there
    [(newest,)] = _rows(db_path, "SELECT MAX(event_seq) FROM events")
    owners = {row[0] for row in _rows(db_path, "SELECT delivery_id FROM events "
                                               "WHERE event_seq < ?", newest)}
    assert owners <= {ids["unrouted"], ids["sending"]}
    assert everything > 0


async def test_a_prune_chunk_is_all_or_nothing(db_path, workspace) -> None:
    """A chunk that fails after it deleted (a crash, a full disk: here the next op of its
    transaction raises) leaves nothing deleted."""
    await _populate(db_path, workspace, [1_000.0])
    before = {table: _rows(db_path, f"SELECT * FROM {table}")
              for table in ("outbox", "work_items", "events", "event_horizon",
                            "client_messages")}

    def boom(conn: sqlite3.Connection) -> None:
        assert conn.execute("SELECT count(*) FROM outbox").fetchone()[0] == 3  # it had run
        raise sqlite3.OperationalError("disk I/O error")

    async with open_store(db_path) as store:
        with pytest.raises(StoreError):
            await store.commit([prune_call(2_000.0), Call(boom)])
    for table, rows in before.items():
        assert _rows(db_path, f"SELECT * FROM {table}") == rows, table


async def test_events_are_deleted_only_below_the_horizon_which_only_rises(
        db_path, workspace) -> None:
    await _populate(db_path, workspace, [1_000.0])
    async with open_store(db_path) as store:
        for sql in ("DELETE FROM events WHERE event_seq = 1",
                    "UPDATE events SET type = 'x' WHERE event_seq = 1",
                    "DELETE FROM event_horizon",
                    "UPDATE event_horizon SET lowest_kept = 0",
                    "INSERT INTO event_horizon (singleton, lowest_kept) VALUES (2, 1)"):
            with pytest.raises(StoreError):
                await store.commit([Call(lambda conn, sql=sql: conn.execute(sql))])
        await store.commit([Call(lambda conn: conn.execute(
            "UPDATE event_horizon SET lowest_kept = 3"))])
        await store.commit([Call(lambda conn: conn.execute(
            "DELETE FROM events WHERE event_seq < 3"))])
        with pytest.raises(StoreError, match="append-only"):
            await store.commit([Call(lambda conn: conn.execute(
                "DELETE FROM events WHERE event_seq = 3"))])
        with pytest.raises(StoreError, match="only rises"):
            await store.commit([Call(lambda conn: conn.execute(
                "UPDATE event_horizon SET lowest_kept = 2"))])
    assert _rows(db_path, "SELECT MIN(event_seq) FROM events") == [(3,)]


async def test_the_newest_event_is_never_pruned_so_no_seq_is_given_twice(
        db_path, workspace) -> None:
    await _populate(db_path, workspace, [1_000.0])
    [(newest,)] = _rows(db_path, "SELECT MAX(event_seq) FROM events")
    await _prune(db_path, float(MAX_INTEGER))  # every final row, every event it may
    assert _rows(db_path, "SELECT MAX(event_seq) FROM events") == [(newest,)]
    assert _rows(db_path, "SELECT lowest_kept FROM event_horizon") == [(newest,)]
    async with open_store(db_path) as store:
        [seq] = await store.commit([Call(lambda conn: conn.execute(
            "INSERT INTO events (type, created_at) VALUES ('next', 1.0)").lastrowid)])
    assert seq == newest + 1


async def test_a_database_of_schema_v4_is_migrated_keeping_its_events(
        db_path, workspace) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    for version, script in MIGRATIONS[:4]:
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO events (type, created_at) VALUES ('old', 1.0), ('old', 2.0)")
    conn.commit()
    conn.close()
    async with open_store(db_path):
        pass
    assert _rows(db_path, "PRAGMA user_version") == [(SCHEMA_VERSION,)] == [(10,)]
    assert _rows(db_path, "SELECT event_seq, type FROM events") == [(1, "old"), (2, "old")]
    assert _rows(db_path, "SELECT lowest_kept FROM event_horizon") == [(1,)]
    report, _ = await _prune(db_path, 10.0)
    assert report == PruneReport(events=1)  # the newest stays
    assert _rows(db_path, "SELECT event_seq FROM events") == [(2,)]


def test_the_events_of_a_v4_database_read_as_they_are(db_path) -> None:
    """A database of schema v4 (a copy from before retention, one no runtime of this version
    has opened yet) read as it is, read-only: its events page from any cursor as before. The
    feed's query read the event horizon (v5), a table such a file does not have, and every
    read_database(path, queries.events_after, ...) failed with 'no such table'. No prune has
    run on it: the horizon is 1."""
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    for version, script in MIGRATIONS[:4]:
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO events (type, created_at) VALUES ('old', 1.0), ('old', 2.0)")
    conn.commit()
    conn.close()
    events = read_database(db_path, queries.events_after, 0, 10)
    assert [(event.seq, event.type) for event in events] == [(1, "old"), (2, "old")]
    assert [event.seq for event in read_database(db_path, queries.events_after, 1, 10)] == [2]
    assert _rows(db_path, "PRAGMA user_version") == [(4,)]  # read as it is, not migrated


async def test_prune_file_counts_exactly_on_a_dry_run_and_changes_nothing(
        db_path, workspace) -> None:
    await _populate(db_path, workspace, [1_000.0])
    conn = sqlite3.connect(db_path)
    dump = list(conn.iterdump())
    conn.close()
    dry = prune_file(db_path, 2_000.0, dry_run=True)
    conn = sqlite3.connect(db_path)
    assert list(conn.iterdump()) == dump
    conn.close()
    assert dry.deliveries == 2
    assert dry.events > 0
    assert prune_file(db_path, 2_000.0) == dry
    assert prune_file(db_path, 2_000.0) == PruneReport()
    # nor does it register a process epoch: only the populating runtime's is there
    assert _rows(db_path, "SELECT count(*) FROM process_epochs") == [(1,)]


async def test_a_dry_run_leaves_a_v4_database_at_v4(db_path) -> None:
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    for version, script in MIGRATIONS[:4]:
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO events (type, created_at) VALUES ('old', 1.0), ('old', 2.0)")
    conn.commit()
    conn.close()
    assert prune_file(db_path, 10.0, dry_run=True) == PruneReport(events=1)
    assert _rows(db_path, "PRAGMA user_version") == [(4,)]
    assert _rows(db_path, "SELECT count(*) FROM events") == [(2,)]


async def test_a_feed_reader_below_the_horizon_is_told_events_were_pruned(
        db_path, workspace) -> None:
    await _populate(db_path, workspace, [1_000.0])
    prune_file(db_path, 2_000.0)
    [(horizon,)] = _rows(db_path, "SELECT lowest_kept FROM event_horizon")
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        for after_seq in (0, horizon - 2):
            with pytest.raises(EventsPrunedError) as caught:
                await rt.events(after_seq=after_seq).__anext__()
            assert caught.value.field == "after_seq"
            assert (caught.value.after_seq, caught.value.first_kept) == (after_seq, horizon)
            assert f"events up to seq {horizon - 1} were pruned" in str(caught.value)
            assert isinstance(caught.value, ValidationError)
        event = await rt.events(after_seq=horizon - 1).__anext__()  # the gap accepted
        assert event.seq >= horizon


@pytest.mark.parametrize("dry_run", [False, True], ids=["prune", "dry-run"])
def test_prune_file_refuses_a_file_sqlite_cannot_read_as_a_store_error(tmp_path,
                                                                       dry_run) -> None:
    """A text file (a mistyped path): prune_file let SQLite's own DatabaseError out, a
    library internal (tidings.errors: callers catch a few meaningful classes), where its
    docstring and every other opener say StoreError, naming the file."""
    text = tmp_path / "notes.db"
    text.write_text("not a database\n")
    with pytest.raises(StoreError, match="file is not a database") as caught:
        prune_file(text, 2_000.0, dry_run=dry_run)
    assert str(text) in str(caught.value)
    assert text.read_text() == "not a database\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.db"]


def test_prune_file_of_a_relative_path_that_reads_as_a_uri_prunes_that_file(
        tmp_path, monkeypatch) -> None:
    # SQLite built to take URI file names (Debian's) read the relative 'file:tidings.db' as a
    # URI: the schema check read the file given, then the write connection made another one,
    # ./tidings.db, migrated it into a tidings database and pruned that.
    given = fresh_database(tmp_path / "file:tidings.db")
    monkeypatch.chdir(tmp_path)
    assert prune_file(pathlib.Path("file:tidings.db"), cutoff=1_000.0) == PruneReport()
    assert not (tmp_path / "tidings.db").exists()
    assert _rows(given, "SELECT count(*) FROM process_epochs") == [(0,)]


class _InterruptedAfterCommit:
    """The prune's write connection, with Ctrl-C landing right after its first COMMIT
    returned (a signal is raised between two bytecodes, so it can)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self.commits = 0

    def execute(self, sql: str, *args: object) -> sqlite3.Cursor:
        cursor = self._conn.execute(sql, *args)
        if sql == "COMMIT":
            self.commits += 1
            if self.commits == 1:
                raise KeyboardInterrupt
        return cursor

    def __getattr__(self, name: str) -> object:
        return getattr(self._conn, name)


async def test_prune_file_tells_on_chunk_of_a_chunk_an_interrupt_came_right_after(
        db_path, workspace, monkeypatch) -> None:
    """on_chunk is how a caller cut short (tidings prune's Ctrl-C) knows what went: a chunk
    that committed just before the interrupt went, and is told, once."""
    ids = await _populate(db_path, workspace, [1_000.0])
    monkeypatch.setattr(prune_module, "DELIVERIES_PER_STEP", 1)
    real = prune_module.connect_writer
    monkeypatch.setattr(prune_module, "connect_writer",
                        lambda path: _InterruptedAfterCommit(real(path)))
    told: list[PruneReport] = []
    with pytest.raises(KeyboardInterrupt):
        prune_file(db_path, 2_000.0, on_chunk=told.append)
    [chunk] = told
    assert chunk.deliveries == 1
    assert len(_rows(db_path, "SELECT delivery_id FROM outbox WHERE delivery_id IN (?, ?)",
                     ids["sent"], ids["failed"])) == 1


def test_prune_file_refuses_an_on_chunk_that_is_not_callable(db_path) -> None:
    with pytest.raises(ValidationError) as caught:
        prune_file(db_path, 2_000.0, on_chunk="chunks")
    assert caught.value.field == "on_chunk"
    assert not db_path.parent.exists()


@pytest.mark.parametrize(("cutoff", "sweep_from", "field"), [
    ("2000", 0, "cutoff"), (float("nan"), 0, "cutoff"), (float("inf"), None, "cutoff"),
    (True, 0, "cutoff"), (None, 0, "cutoff"),
    (2_000.0, "0", "sweep_from"), (2_000.0, -1, "sweep_from"), (2_000.0, 1.5, "sweep_from"),
    (2_000.0, True, "sweep_from")])
async def test_prune_call_refuses_a_bad_cutoff_or_sweep_from_before_the_writer(
        db_path, workspace, cutoff, sweep_from, field) -> None:
    """A string cutoff reached the writer and failed there, an unnamed ``TypeError`` (a
    string compares as greater than every number in SQLite: the deliveries were deleted
    before it failed, and its commit rolled back); a NaN one (bound as NULL) was a
    prune that deleted nothing, silently. Refused as ``prune_file`` refuses them, naming
    the field, when the op is made."""
    ids = await _populate(db_path, workspace, [1_000.0])
    async with open_store(db_path) as store:
        with pytest.raises(ValidationError) as caught:
            await store.commit([prune_call(cutoff, sweep_from)])
        assert caught.value.field == field
        assert not isinstance(caught.value, StoreError)
    assert len(_rows(db_path, "SELECT 1 FROM outbox WHERE delivery_id IN (?, ?)",
                     ids["sent"], ids["failed"])) == 2
