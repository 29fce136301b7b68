"""Read queries: plain functions of a read-only connection, run through ``Store.read``.

Each takes the connection first so it can run in a worker thread inside one read transaction.
None caps the number of rows silently: callers pass ``limit`` and page with the returned keys.
"""

from __future__ import annotations

import sqlite3

from tidings.store._records import (
    DeliveryStatus,
    HistoryMessage,
    OutboxRow,
    RuntimeEvent,
    SessionRecord,
)
from tidings.store._status import check_filters, filter_clause

__all__ = [
    "count_by_status",
    "deliveries",
    "delivery",
    "delivery_events",
    "events_after",
    "find_idempotent",
    "history",
    "open_outbox_rows",
    "session",
    "session_for_conversation",
]


def delivery(conn: sqlite3.Connection, delivery_id: str) -> DeliveryStatus | None:
    row = conn.execute(f"SELECT {DeliveryStatus.COLUMNS} FROM delivery_lifecycle "
                       "WHERE delivery_id = ?", (delivery_id,)).fetchone()
    return None if row is None else DeliveryStatus.from_row(row)


def deliveries(conn: sqlite3.Connection, *, session_id: str | None = None,
               status: str | None = None, since: float | None = None,
               limit: int | None = None, newest_first: bool = False) -> list[DeliveryStatus]:
    """Deliveries filtered by session, effective status and ``updated_at >= since``.

    Raises :class:`~tidings.errors.ValidationError` naming a bad ``status``, ``since`` or
    ``limit`` (an unknown status would otherwise match nothing, silently).
    """
    check_filters(status=status, since=since, limit=limit)
    where, params = filter_clause(session_id, status, since)
    order = "updated_at DESC, delivery_id" if newest_first else "session_id, seq"
    sql = f"SELECT {DeliveryStatus.COLUMNS} FROM delivery_lifecycle{where} ORDER BY {order}"
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    return [DeliveryStatus.from_row(row) for row in conn.execute(sql, params)]


def count_by_status(conn: sqlite3.Connection, *, session_id: str | None = None,
                    since: float | None = None) -> dict[str, int]:
    """Effective status -> number of deliveries (statuses with none are absent)."""
    where, params = filter_clause(session_id, None, since)
    return dict(conn.execute(
        f"SELECT status, count(*) FROM delivery_lifecycle{where} GROUP BY status ORDER BY status",
        params).fetchall())


def delivery_events(conn: sqlite3.Connection, delivery_id: str) -> list[RuntimeEvent]:
    return [RuntimeEvent.from_row(row) for row in conn.execute(
        f"SELECT {RuntimeEvent.COLUMNS} FROM events WHERE delivery_id = ? ORDER BY event_seq",
        (delivery_id,))]


def events_after(conn: sqlite3.Connection, after_seq: int, limit: int) -> list[RuntimeEvent]:
    return [RuntimeEvent.from_row(row) for row in conn.execute(
        f"SELECT {RuntimeEvent.COLUMNS} FROM events WHERE event_seq > ? "
        "ORDER BY event_seq LIMIT ?", (after_seq, limit))]


def history(conn: sqlite3.Connection, session_id: str, *,
            model_context: bool = False) -> list[HistoryMessage] | None:
    """The session's history rows in order (``model_context``: only model-visible ones), or
    None when there is no such session (an empty history is ``[]``)."""
    if conn.execute("SELECT 1 FROM sessions WHERE session_id = ?",
                    (session_id,)).fetchone() is None:
        return None
    sql = f"SELECT {HistoryMessage.COLUMNS} FROM messages WHERE session_id = ?"
    if model_context:
        sql += " AND model_visible = 1"
    return [HistoryMessage.from_row(row)
            for row in conn.execute(sql + " ORDER BY history_id", (session_id,))]


def open_outbox_rows(conn: sqlite3.Connection, session_id: str, *, after_seq: int,
                     limit: int, statuses: tuple[str, ...] = ("queued",),
                     max_size: int | None = None) -> list[OutboxRow]:
    """A session's rows in *statuses* with ``seq > after_seq``, in seq order.

    For ``queued`` alone (what lanes read) the query goes through the partial index
    ``outbox_queued``, so it never steps over rows a long session has already sent (a rewound
    lane reads from seq 0). Left to itself SQLite picks ``outbox_session_seq`` instead.

    *max_size* (a lane's memory budget) stops the read before a row whose ``size`` (its
    text, its blocks' and metadata's JSON: ``_records.held_size``) would take the rows' sizes
    past it; the first row is always taken, however large, so a row larger than the budget is
    still read. Rows are stepped one at a time: none past the row that stops the read is
    loaded.
    """
    if statuses == ("queued",):
        cursor = conn.execute(
            f"SELECT {OutboxRow.COLUMNS} FROM outbox INDEXED BY outbox_queued "
            "WHERE session_id = ? AND seq > ? AND status = 'queued' ORDER BY seq LIMIT ?",
            (session_id, after_seq, limit))
    else:
        marks = ",".join("?" * len(statuses))
        cursor = conn.execute(
            f"SELECT {OutboxRow.COLUMNS} FROM outbox WHERE session_id = ? AND seq > ? "
            f"AND status IN ({marks}) ORDER BY seq LIMIT ?",
            (session_id, after_seq, *statuses, limit))
    if max_size is None:
        return [OutboxRow.from_row(row) for row in cursor]
    rows: list[OutboxRow] = []
    total = 0
    for raw in cursor:
        row = OutboxRow.from_row(raw)
        total += row.size
        if rows and total > max_size:
            break
        rows.append(row)
    cursor.close()
    return rows


def find_idempotent(conn: sqlite3.Connection, session_id: str,
                    key: str) -> DeliveryStatus | None:
    row = conn.execute(
        "SELECT delivery_id FROM outbox WHERE session_id = ? AND idempotency_key = ?",
        (session_id, key)).fetchone()
    return None if row is None else delivery(conn, row[0])


def session(conn: sqlite3.Connection, session_id: str) -> SessionRecord | None:
    row = conn.execute(f"SELECT {SessionRecord.COLUMNS} FROM sessions WHERE session_id = ?",
                       (session_id,)).fetchone()
    return None if row is None else SessionRecord.from_row(row)


def session_for_conversation(conn: sqlite3.Connection, core_id: str, channel: str,
                             conversation_key: str) -> str | None:
    row = conn.execute(
        "SELECT session_id FROM conversation_bindings "
        "WHERE core_id = ? AND channel = ? AND conversation_key = ?",
        (core_id, channel, conversation_key)).fetchone()
    return None if row is None else row[0]
