"""The reads recovery is made of: small, indexed, keyset-paged, so no pass has a row cap.

Each function answers one page and takes the key to continue after; a caller loops until a page
comes back empty. Every query is an index seek or range (``outbox_status_updated``, and the
partial indexes ``outbox_queued``, ``outbox_unknown``, ``outbox_unrouted_progress`` and
``outbox_stale_progress``), never a
scan of the outbox, so a pass over a million rows costs a million index steps and no more.
``tests/store/test_recovery_queries.py`` pins the plans.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any

import attrs

__all__ = [
    "SessionHead",
    "dead_claims",
    "dead_turns",
    "earlier_progress",
    "last_outbox_rowid",
    "queued_heads",
    "stale_progress",
    "unknown_attempts",
    "unknown_rows",
    "unknown_sessions",
    "unrouted_progress",
]


@attrs.frozen
class SessionHead:
    """The first ``queued`` row of one session: where its lane would start."""

    session_id: str
    seq: int
    updated_at: float


def dead_claims(conn: sqlite3.Connection, claimant: str, limit: int) -> list[str]:
    """Ids of ``sending`` rows claimed by anyone but *claimant* (at most *limit*).

    Rows leave the answer once they are moved on, so callers simply ask again.
    """
    return [row[0] for row in conn.execute(
        "SELECT delivery_id FROM outbox INDEXED BY outbox_status_updated "
        "WHERE status = 'sending' AND claimant IS NOT ? LIMIT ?", (claimant, limit))]


def dead_turns(conn: sqlite3.Connection, before: float, limit: int) -> list[str]:
    """Ids of turns still ``running`` that started before *before* (an earlier process's:
    it stopped before it could record how they ended)."""
    return [row[0] for row in conn.execute(
        "SELECT turn_id FROM turns INDEXED BY turns_running "
        "WHERE status = 'running' AND started_at < ? LIMIT ?", (before, limit))]


def stale_progress(conn: sqlite3.Connection, before: float, limit: int,
                   up_to_rowid: int | None = None) -> list[str]:
    """Ids of ``queued`` progress rows created before *before* (an earlier process's), and,
    given *up_to_rowid* (:func:`last_outbox_rowid` when this process opened), written
    before this process opened: a wall clock stepped back after the open dates this
    process's own notes before its start, and that alone must not make them stale."""
    bound = "" if up_to_rowid is None else " AND rowid <= ?"
    return [row[0] for row in conn.execute(
        "SELECT delivery_id FROM outbox INDEXED BY outbox_stale_progress "
        f"WHERE status = 'queued' AND kind = 'progress' AND created_at < ?{bound} LIMIT ?",
        (before, limit) if up_to_rowid is None else (before, up_to_rowid, limit))]


def unrouted_progress(conn: sqlite3.Connection, after: tuple[str, int],
                      limit: int) -> tuple[list[str], tuple[str, int] | None]:
    """One page of the ``unrouted`` progress notes ordered after *after* (``(session_id,
    seq)``; start at ``("", 0)``), at most *limit*: their ids, and the key to continue after
    (None once there are no more). A range of the ``outbox_unrouted_progress`` index (v10):
    the ``unrouted`` messages and notices, which no prune deletes, are never read."""
    rows = conn.execute(
        "SELECT delivery_id, session_id, seq FROM outbox INDEXED BY outbox_unrouted_progress "
        "WHERE status = 'unrouted' AND kind = 'progress' AND (session_id, seq) > (?, ?) "
        "ORDER BY session_id, seq LIMIT ?", (*after, limit)).fetchall()
    if not rows:
        return [], None
    return [row[0] for row in rows], (rows[-1][1], rows[-1][2])


def earlier_progress(conn: sqlite3.Connection, delivery_ids: list[str],
                     up_to_rowid: int) -> list[str]:
    """Those of *delivery_ids* that are progress notes written at or below *up_to_rowid*
    (before this process opened: see :func:`stale_progress`)."""
    return [row[0] for row in _outbox_rows_of(
        conn, "SELECT delivery_id FROM outbox WHERE delivery_id IN ({ids}) "
              "AND kind = 'progress' AND rowid <= ?", delivery_ids, up_to_rowid)]


def unknown_attempts(conn: sqlite3.Connection, delivery_ids: list[str]) -> dict[str, int]:
    """``delivery_id -> attempts`` of those of *delivery_ids* still ``unknown``: a reconcile
    compares them before and after its ask, since a row handed back, delivered again and
    left ``unknown`` again meanwhile is no longer the one the platform was asked about."""
    return {row[0]: int(row[1]) for row in _outbox_rows_of(
        conn, "SELECT delivery_id, attempts FROM outbox WHERE delivery_id IN ({ids}) "
              "AND status = 'unknown'", delivery_ids)}


_IDS_PER_STATEMENT = 500
"""Under SQLite's limit of parameters, whatever the build."""


def _outbox_rows_of(conn: sqlite3.Connection, sql: str, delivery_ids: list[str],
                    *params: object) -> Iterator[tuple[Any, ...]]:
    """The rows of *sql* (its ``{ids}`` the placeholders of the ids, its other ``?`` *params*,
    after them) for *delivery_ids*: one primary-key seek each, :data:`_IDS_PER_STATEMENT`
    ids a statement."""
    for start in range(0, len(delivery_ids), _IDS_PER_STATEMENT):
        chunk = delivery_ids[start:start + _IDS_PER_STATEMENT]
        yield from conn.execute(sql.format(ids=",".join("?" * len(chunk))), (*chunk, *params))


def last_outbox_rowid(conn: sqlite3.Connection) -> int:
    """The highest ``rowid`` of the outbox (0 when empty): a row written later has a higher
    one (SQLite gives a new row the highest rowid + 1), whatever the wall clock says, until
    a prune deletes the rows that have the highest: the next rows then get their rowids
    again, above the highest left (:attr:`~tidings.store._prune.PruneStep.last_rowid`)."""
    return int(conn.execute("SELECT max(rowid) FROM outbox").fetchone()[0] or 0)


def queued_heads(conn: sqlite3.Connection, after_session: str, limit: int) -> list[SessionHead]:
    """The first ``queued`` row of each session ordered after *after_session* (up to *limit*
    sessions, in session order). One index seek per session, however long its backlog."""
    heads: list[SessionHead] = []
    cursor = after_session
    query = ("SELECT session_id, seq, updated_at FROM outbox INDEXED BY outbox_queued "
             "WHERE status = 'queued' AND session_id > ? ORDER BY session_id, seq LIMIT 1")
    while len(heads) < limit:
        row = conn.execute(query, (cursor,)).fetchone()
        if row is None:
            break
        heads.append(SessionHead(*row))
        cursor = row[0]
    return heads


def unknown_sessions(conn: sqlite3.Connection, after_session: str, limit: int) -> list[str]:
    """Sessions with ``unknown`` rows, ordered after *after_session* (up to *limit*)."""
    sessions: list[str] = []
    cursor = after_session
    query = ("SELECT session_id FROM outbox INDEXED BY outbox_unknown "
             "WHERE status = 'unknown' AND session_id > ? ORDER BY session_id, seq LIMIT 1")
    while len(sessions) < limit:
        row = conn.execute(query, (cursor,)).fetchone()
        if row is None:
            break
        sessions.append(row[0])
        cursor = row[0]
    return sessions


def unknown_rows(conn: sqlite3.Connection, session_id: str, after_seq: int,
                 limit: int) -> list[tuple[str, int]]:
    """``(delivery_id, seq)`` of the session's ``unknown`` rows with ``seq > after_seq``."""
    return [(row[0], row[1]) for row in conn.execute(
        "SELECT delivery_id, seq FROM outbox INDEXED BY outbox_unknown "
        "WHERE status = 'unknown' AND session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
        (session_id, after_seq, limit))]
