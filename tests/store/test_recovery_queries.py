"""The recovery reads page correctly and never scan the outbox (their query plans are pinned)."""

from __future__ import annotations

import json
import pathlib
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from tidings.store import OutboxInsert, open_store, queries, recovery, status_counts
from tidings.store import recent_deliveries as recent


@pytest.fixture
def db(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "recovery.db"


def _fill(db: pathlib.Path) -> None:
    """Three sessions with rows in every status, written with plain SQL."""
    conn = sqlite3.connect(db)
    statuses = ["sent", "queued", "sending", "unknown", "queued", "failed", "unrouted", "unknown"]
    with conn:
        for s in range(3):
            sid = f"s{s}"
            conn.execute("INSERT INTO sessions (session_id, core_id, last_seq, created_at, "
                         "updated_at) VALUES (?, 'c', ?, 0, 0)", (sid, len(statuses)))
            for seq, status in enumerate(statuses, start=1):
                kind = "progress" if seq == 5 else "message"
                conn.execute(
                    "INSERT INTO outbox (delivery_id, session_id, seq, work_id, kind, text, "
                    "blocks, metadata, visible, status, claimant, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, '', '[]', '{}', 1, ?, ?, ?, ?)",
                    (f"{sid}-{seq}", sid, seq, f"w-{sid}-{seq}", kind, status,
                     "epoch:0" if status == "sending" else None, seq, seq))
    conn.close()


def _run(db: pathlib.Path, fn: Callable[..., Any], *args: Any, **kwargs: Any
         ) -> tuple[Any, list[str]]:
    """Run *fn* on a connection, returning its result and the SQL it ran."""
    conn = sqlite3.connect(db)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        return fn(conn, *args, **kwargs), statements
    finally:
        conn.close()


def _plans(db: pathlib.Path, statements: list[str]) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return [row[3] for sql in statements
                for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    finally:
        conn.close()


async def _migrated(db: pathlib.Path) -> None:
    async with open_store(db):
        pass


READS = [
    (recovery.dead_claims, ("epoch:9", 10)),
    (recovery.stale_progress, (100.0, 10)),
    (recovery.stale_progress, (100.0, 10, 20)),  # bounded by the outbox's rowid at open
    (recovery.queued_heads, ("", 10)),
    (recovery.unknown_sessions, ("", 10)),
    (recovery.unknown_rows, ("s1", 0, 10)),
    (recovery.unrouted_progress, (("s0", 3), 10)),
]


@pytest.mark.parametrize(("fn", "args"), READS, ids=[fn.__name__ for fn, _ in READS])
async def test_recovery_reads_seek_an_index_and_never_scan_the_outbox(db, fn, args) -> None:
    await _migrated(db)
    _fill(db)
    _, statements = _run(db, fn, *args)
    plans = _plans(db, statements)
    assert plans
    assert all(plan.startswith("SEARCH outbox USING INDEX") for plan in plans), plans


async def test_a_lane_refill_reads_only_queued_rows_through_their_partial_index(db) -> None:
    await _migrated(db)
    _fill(db)
    rows, statements = _run(db, queries.open_outbox_rows, "s1", after_seq=0, limit=10)
    assert [row.seq for row in rows] == [2, 5]
    assert _plans(db, statements) == [
        "SEARCH outbox USING INDEX outbox_queued (session_id=? AND seq>?)"]


async def test_status_counts_and_a_status_filter_use_the_status_index(db) -> None:
    await _migrated(db)
    _fill(db)
    counts, statements = _run(db, status_counts)
    assert counts["unknown"] == 9  # six unknown rows, three `sending` ones of a dead epoch
    plans = _plans(db, statements)
    assert "SCAN outbox USING COVERING INDEX outbox_status_updated" in plans
    assert not [plan for plan in plans if plan in ("SCAN o", "SCAN outbox")]
    rows, statements = _run(db, recent, status="failed")
    assert [row.delivery_id for row in rows] == ["s0-6", "s1-6", "s2-6"]  # ties: by id
    assert any("USING INDEX outbox_status_updated" in p for p in _plans(db, statements))


async def test_pages_cover_every_row_and_every_session_once(db) -> None:
    await _migrated(db)
    _fill(db)
    conn = sqlite3.connect(db)
    try:
        heads = []
        after = ""
        while page := recovery.queued_heads(conn, after, 2):
            heads += page
            after = page[-1].session_id
        sessions = []
        after = ""
        while page := recovery.unknown_sessions(conn, after, 2):
            sessions += page
            after = page[-1]
        rows = []
        seq = 0
        while page := recovery.unknown_rows(conn, "s1", seq, 1):
            rows += page
            seq = page[-1][1]
        stale = recovery.stale_progress(conn, 100.0, 10)
        written_by = recovery.stale_progress(conn, 100.0, 10, 13)  # rows s0-*, s1-* only
        unrouted = []
        unrouted_ids: list[str] = []
        key: tuple[str, int] | None = ("", 0)
        while key is not None:  # the unrouted rows are messages: not read, the end at once
            ids, key = recovery.unrouted_progress(conn, key, 1)
            unrouted_ids += ids
            unrouted.append(key)
        last = recovery.last_outbox_rowid(conn)
        claims = recovery.dead_claims(conn, "epoch:0", 10) + recovery.dead_claims(conn, "x", 10)
    finally:
        conn.close()
    assert [(h.session_id, h.seq) for h in heads] == [("s0", 2), ("s1", 2), ("s2", 2)]
    assert sessions == ["s0", "s1", "s2"]
    assert rows == [("s1-4", 4), ("s1-8", 8)]
    assert sorted(stale) == ["s0-5", "s1-5", "s2-5"]
    assert (sorted(written_by), last) == (["s0-5", "s1-5"], 24)
    assert sorted(claims) == ["s0-3", "s1-3", "s2-3"]  # none of them for their own claimant
    assert unrouted == [None]
    assert unrouted_ids == []  # only messages are unrouted here


async def test_unrouted_progress_reads_only_unrouted_progress_rows_through_their_index(
        db) -> None:
    """Recovery at open looks for an earlier process's ``unrouted`` progress notes: a seek of
    the partial index of those alone, so the ``unrouted`` messages and notices (which no prune
    deletes, so they only grow) are never read, and pages hold only progress notes."""
    await _migrated(db)
    _fill(db)  # every unrouted row here is a message
    conn = sqlite3.connect(db)
    try:
        assert recovery.unrouted_progress(conn, ("", 0), 1) == ([], None)  # one page, no row
        with conn:
            for sid, seq in (("s0", 9), ("s2", 9), ("s2", 10)):
                conn.execute(
                    "INSERT INTO outbox (delivery_id, session_id, seq, work_id, kind, text, "
                    "blocks, metadata, visible, status, created_at, updated_at) VALUES "
                    "(?, ?, ?, ?, 'progress', '', '[]', '{}', 1, 'unrouted', 1, 1)",
                    (f"{sid}-{seq}", sid, seq, f"w-{sid}-{seq}"))
        pages = []
        key: tuple[str, int] | None = ("", 0)
        while key is not None:
            ids, key = recovery.unrouted_progress(conn, key, 2)
            pages.append((ids, key))
    finally:
        conn.close()
    assert pages == [(["s0-9", "s2-9"], ("s2", 9)), (["s2-10"], ("s2", 10)), ([], None)]
    _, statements = _run(db, recovery.unrouted_progress, ("s0", 3), 10)
    assert _plans(db, statements) == [
        "SEARCH outbox USING INDEX outbox_unrouted_progress ((session_id,seq)>(?,?))"]


async def test_an_insert_through_the_pipeline_op_is_found_by_the_recovery_reads(db) -> None:
    async with open_store(db) as store:
        await store.commit([_session_op("s")])
        await store.commit([OutboxInsert({
            "delivery_id": "d1", "session_id": "s", "work_id": "w1", "kind": "progress",
            "text": "", "blocks": "[]", "metadata": json.dumps({}), "visible": 1,
            "status": "queued", "created_at": 5.0, "updated_at": 5.0})])
        heads = await store.read(recovery.queued_heads, "", 10)
        stale = await store.read(recovery.stale_progress, 6.0, 10)
    assert [(h.session_id, h.seq, h.updated_at) for h in heads] == [("s", 1, 5.0)]
    assert stale == ["d1"]


def _session_op(session_id: str) -> Any:
    from tidings.store import create_session
    return create_session(session_id, core_id="c", channel=None, now=0.0)[0]
