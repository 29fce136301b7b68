"""Read queries: plain functions of a read-only connection, run through ``Store.read``.

Each takes the connection first so it can run in a worker thread inside one read transaction.
None caps the number of rows silently. Those that can return many take a ``limit``:
``events_after`` and ``open_outbox_rows`` page forward from a returned key (``after_seq``),
``history`` backwards from one (``before=page[0].message_id``); ``deliveries`` only cuts (its
``limit`` keeps the first rows of its order, and it takes no key to go on from).
"""

from __future__ import annotations

import sqlite3

from tidings.store._errors import EventsPrunedError, ValidationError
from tidings.store._ids import check_id
from tidings.store._prune import first_kept_event
from tidings.store._records import (
    DeliveryStatus,
    HistoryMessage,
    OutboxRow,
    RuntimeEvent,
    SessionRecord,
    rows_within,
)
from tidings.store._schema import MAX_INTEGER
from tidings.store._status import check_filters, filter_clause, shown

__all__ = [
    "check_page",
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
    """The events with ``seq > after_seq``, in order (at most *limit*). Raises
    :class:`~tidings.errors.EventsPrunedError` when a prune has deleted some of them (the
    cursor is below the event horizon): the page would start past a gap. One read
    transaction (``Store.read``), so the horizon and the page agree."""
    first_kept = first_kept_event(conn)
    if after_seq < first_kept - 1:
        raise EventsPrunedError(after_seq, first_kept)
    return [RuntimeEvent.from_row(row) for row in conn.execute(
        f"SELECT {RuntimeEvent.COLUMNS} FROM events WHERE event_seq > ? "
        "ORDER BY event_seq LIMIT ?", (after_seq, limit))]


def history(conn: sqlite3.Connection, session_id: str, *, model_context: bool = False,
            limit: int | None = None,
            before: str | None = None) -> list[HistoryMessage] | None:
    """The session's history rows in order (``model_context``: only model-visible ones), or
    None when there is no such session (an empty history is ``[]``).

    A page: ``before`` (a message id of the session) keeps the rows older than that message,
    ``limit`` the latest ``limit`` of those left (after the ``model_context`` filter), still
    oldest first; so ``before=page[0].message_id`` gives the page before *page*. The message
    is found by its unique id and the page read backwards on ``messages_session (session_id,
    history_id)`` from it, stopping after ``limit`` rows: a page costs the same in a session of
    any length (no scan of the session, no sort); with ``model_context`` the model-hidden rows
    it passes over are read too (the index does not hold the flag). ``limit`` and ``before``
    are checked by the caller (:func:`check_page`); a ``before`` that is no message of this
    session raises :class:`ValidationError` naming it.
    """
    if conn.execute("SELECT 1 FROM sessions WHERE session_id = ?",
                    (session_id,)).fetchone() is None:
        return None
    where = "session_id = ?"
    params: list[object] = [session_id]
    if before is not None:
        found = conn.execute("SELECT session_id, history_id FROM messages WHERE message_id = ?",
                             (before,)).fetchone()
        if found is None or found[0] != session_id:
            whose = "no message" if found is None else "a message of another session"
            raise ValidationError("before", f"must be the message_id of a history row of "
                                            f"session {session_id!r:.80}; {before!r:.80} is "
                                            f"{whose}")
        where += " AND history_id < ?"
        params.append(found[1])
    if model_context:
        where += " AND model_visible = 1"
    sql = (f"SELECT {HistoryMessage.COLUMNS} FROM messages INDEXED BY messages_session "
           f"WHERE {where} ORDER BY history_id")
    if limit is None:
        return [HistoryMessage.from_row(row) for row in conn.execute(sql, params)]
    page = [HistoryMessage.from_row(row)
            for row in conn.execute(sql + " DESC LIMIT ?", (*params, limit))]
    page.reverse()
    return page


def check_page(limit: object, before: object) -> None:
    """Raise :class:`ValidationError` naming a bad ``limit`` (an int from 1 to
    :data:`MAX_INTEGER`: ``0`` would be a page of nothing, a bool or float a mistake) or a
    ``before`` that is no id (:func:`check_id`; not capped: it is only looked up)."""
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                              or not 1 <= limit <= MAX_INTEGER):
        raise ValidationError("limit", f"must be None or an int from 1 to {MAX_INTEGER}, "
                                       f"got {shown(limit)}")
    if before is not None:
        check_id("before", before, max_chars=None)


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
    rows = rows_within(cursor, max_size)
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
