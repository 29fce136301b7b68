"""The filtered reads of the outbox: index use (cost follows the rows asked for, not the table)
and the refusal of filter values that can match nothing or that SQLite cannot bind."""

from __future__ import annotations

import pathlib
import random
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from tidings.errors import ValidationError
from tidings.store import (
    MAX_INTEGER,
    OUTBOX_STATUSES,
    open_store,
    queries,
    read_database,
    recent_deliveries,
    status_report,
)


@pytest.fixture
async def db(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "filters.db"
    async with open_store(path):
        pass
    return path


def _fill(db: pathlib.Path, rows: int, seed: int = 7) -> None:
    """*rows* outbox rows over a few sessions, statuses and (tied) times; ``sending`` rows are
    claimed by a dead epoch, so they read ``unknown``; each has its work item."""
    rng = random.Random(seed)
    conn = sqlite3.connect(db)
    with conn:
        for i in range(rows):
            status = rng.choice(OUTBOX_STATUSES)
            conn.execute(
                "INSERT INTO outbox (delivery_id, session_id, seq, work_id, kind, text, blocks, "
                "metadata, visible, status, claimant, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, 'message', '', '[]', '{}', 1, ?, ?, ?, ?)",
                (f"d{rng.randrange(10**6):06d}-{i}", f"s{i % 5}", i, f"w{i}", status,
                 "epoch:0" if status == "sending" else None, i, float(rng.randrange(40))))
            conn.execute("INSERT INTO work_items (work_id, kind, subject_id, status, created_at, "
                         "updated_at) VALUES (?, 'delivery', ?, 'pending', 0, 0)",
                         (f"w{i}", f"d{i}"))
    conn.close()


def _plans(db: pathlib.Path, fn: Callable[..., Any], **kwargs: Any) -> list[str]:
    """The query plan lines of every SELECT *fn* runs."""
    conn = sqlite3.connect(db)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    try:
        fn(conn, **kwargs)
        return [row[3] for sql in statements if sql.lstrip().upper().startswith("SELECT")
                for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    finally:
        conn.close()


def _scans(plans: list[str]) -> list[str]:
    return [plan for plan in plans if plan.startswith(("SCAN o", "SCAN outbox"))]


@pytest.mark.parametrize("status", ["unknown", "failed", "sending"])
async def test_deliveries_by_status_seek_the_status_index_instead_of_scanning(db, status) -> None:
    _fill(db, 200)
    plans = _plans(db, queries.deliveries, status=status)
    assert not _scans(plans), plans
    found = read_database(db, queries.deliveries, status=status)
    every = read_database(db, queries.deliveries)
    assert found == [row for row in every if row.status == status]
    assert found == sorted(found, key=lambda row: (row.session_id, row.seq))


@pytest.mark.parametrize("kwargs", [{}, {"since": 30.0}, {"session_id": "s2"}],
                         ids=["unfiltered", "since", "session"])
async def test_the_most_recent_rows_never_scan_and_sort_the_whole_outbox(db, kwargs) -> None:
    _fill(db, 300)
    plans = _plans(db, recent_deliveries, limit=5, **kwargs)
    assert not _scans(plans), plans


FILTERS = [{}, {"since": 20.0}, {"session_id": "s3"}, {"status": "unknown"},
           {"status": "sending"}, {"status": "sent", "since": 35.0},
           {"session_id": "s1", "status": "queued", "since": 10.0}]


@pytest.mark.parametrize("kwargs", FILTERS)
@pytest.mark.parametrize("limit", [0, 1, 3, 25, 1_000, None])
async def test_the_most_recent_rows_are_the_newest_of_every_match_ties_by_id(
        db, kwargs, limit) -> None:
    _fill(db, 400, seed=limit or 11)
    every = read_database(db, queries.deliveries, **kwargs)  # per-session order
    expected = sorted(every, key=lambda row: (-row.updated_at, row.delivery_id))
    found = read_database(db, recent_deliveries, limit=limit, **kwargs)
    assert found == expected[:limit]
    report = read_database(db, status_report, limit=limit, **kwargs)
    assert list(report.recent) == expected[:limit]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"since": float("nan")}, "since"),  # compares as NULL: every count 0, no row, silently
    ({"since": 10 ** 20}, "since"),  # SQLite cannot bind it: a raw OverflowError
    ({"limit": MAX_INTEGER + 1}, "limit"),  # the same
])
@pytest.mark.parametrize("fn", [status_report, recent_deliveries, queries.deliveries])
async def test_filters_that_cannot_match_or_bind_are_refused_naming_the_field(
        db, fn, kwargs, field) -> None:
    _fill(db, 10)
    if "limit" in kwargs and fn is status_report:
        read_database(db, fn, limit=MAX_INTEGER)  # the largest limit is fine
    with pytest.raises(ValidationError) as caught:
        read_database(db, fn, **kwargs)
    assert caught.value.field == field
