"""What channels whose clients acknowledge need from the store.

A client that reconnects says which rows of a session it has (``after_seq``): the rows up to it
that are still ``sending`` or ``unknown`` are confirmed by id, the rows after it are read back
for replay. A client's message ids are remembered per conversation (schema v2,
``client_messages``) so a repeated message is recognised, also after a restart.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from tidings.store._ops import Call
from tidings.store._queries import session_for_conversation
from tidings.store._records import OutboxRow, rows_within

__all__ = ["client_message", "conversation_deliveries", "delivery_owners", "ids_through",
           "last_handed_seq", "remember_client_message", "remember_command_message", "rows_after",
           "session_deliveries", "session_last_seq", "settle_client_message",
           "unknown_progress_after", "unrouted_sessions"]


def ids_through(conn: sqlite3.Connection, session_id: str, seq: int,
                statuses: Sequence[str]) -> list[str]:
    """Ids of the session's rows with ``seq <= seq`` in *statuses*, in seq order."""
    marks = ",".join("?" * len(statuses))
    return [row[0] for row in conn.execute(
        f"SELECT delivery_id FROM outbox WHERE session_id = ? AND seq <= ? "
        f"AND status IN ({marks}) ORDER BY seq", (session_id, seq, *statuses))]


def unknown_progress_after(conn: sqlite3.Connection, session_id: str, seq: int) -> list[str]:
    """Ids of the session's progress rows with ``seq > seq`` left ``unknown``, in seq order.
    One seek on the partial index of ``unknown`` rows (the status is written out, not bound:
    SQLite uses a partial index only for a literal), whatever the session's length."""
    return [row[0] for row in conn.execute(
        "SELECT delivery_id FROM outbox WHERE session_id = ? AND seq > ? AND status = 'unknown' "
        "AND kind = 'progress' ORDER BY seq", (session_id, seq))]


def conversation_deliveries(conn: sqlite3.Connection, core_id: str, channel: str,
                            conversation_key: str, delivery_ids: Sequence[str]) -> list[str]:
    """Those of *delivery_ids* that are deliveries of a session the conversation owns (same
    core, channel and conversation key), in one read whatever their number."""
    return [delivery_id for delivery_id, ours in delivery_owners(
        conn, core_id, channel, conversation_key, delivery_ids) if ours]


def delivery_owners(conn: sqlite3.Connection, core_id: str, channel: str,
                    conversation_key: str, delivery_ids: Sequence[str]
                    ) -> list[tuple[str, bool]]:
    """Each of *delivery_ids* the outbox still has, with whether a session the conversation
    owns (same core, channel and conversation key) has it, in one read whatever their
    number. An id it has not is none: never a delivery, or one a prune deleted (final)."""
    if not delivery_ids:
        return []
    values = ",".join(["(?)"] * len(delivery_ids))
    return [(row[0], bool(row[1])) for row in conn.execute(
        "SELECT o.delivery_id, coalesce(s.core_id = ? AND s.channel = ? "
        f"AND s.conversation_key = ?, 0) FROM (VALUES {values}) AS v "
        "JOIN outbox AS o ON o.delivery_id = v.column1 "
        "LEFT JOIN sessions AS s ON s.session_id = o.session_id",
        (core_id, channel, conversation_key, *delivery_ids))]


def unrouted_sessions(conn: sqlite3.Connection, core_id: str, channel: str,
                      conversation_key: str) -> list[str]:
    """The sessions the conversation owns (same core, channel and conversation key) that have
    a visible ``message`` or ``notice`` row left ``unrouted``, or still ``queued`` (it becomes
    ``unrouted`` when its lane finds no route), or a visible ``unrouted`` progress note (a
    hand-back ends it, see :mod:`tidings.channels._handback`), oldest first: a session the
    conversation moved away from (``/new``, ``/clear``) still has such rows after a restart
    (its replies, the notices recovery wrote there), and no client names it again. One seek
    per session on the partial indexes of ``unrouted`` and ``queued`` rows."""
    rows = conn.execute(
        "SELECT s.session_id FROM sessions AS s "
        "WHERE s.core_id = ? AND s.channel = ? AND s.conversation_key = ? AND (EXISTS ("
        "SELECT 1 FROM outbox AS o WHERE o.session_id = s.session_id "
        "AND o.status = 'unrouted' AND o.visible = 1 "
        "AND o.kind IN ('message', 'notice', 'progress')) "
        "OR EXISTS (SELECT 1 FROM outbox AS q WHERE q.session_id = s.session_id "
        "AND q.status = 'queued' AND q.visible = 1 AND q.kind IN ('message', 'notice'))) "
        "ORDER BY s.created_at, s.session_id", (core_id, channel, conversation_key))
    return [row[0] for row in rows]


def session_deliveries(conn: sqlite3.Connection, session_id: str,
                       delivery_ids: Sequence[str]) -> list[str]:
    """Those of *delivery_ids* that are deliveries of *session_id*, in one read whatever their
    number (a row's session never changes, so the answer stays true)."""
    if not delivery_ids:
        return []
    values = ",".join(["(?)"] * len(delivery_ids))
    return [row[0] for row in conn.execute(
        f"SELECT o.delivery_id FROM (VALUES {values}) AS v "
        "JOIN outbox AS o ON o.delivery_id = v.column1 WHERE o.session_id = ?",
        (*delivery_ids, session_id))]


def rows_after(conn: sqlite3.Connection, session_id: str, after_seq: int, limit: int, *,
               kinds: Sequence[str], statuses: Sequence[str],
               max_size: int | None = None) -> list[OutboxRow]:
    """The session's visible rows with ``seq > after_seq`` of *kinds* in *statuses*, in seq
    order (at most *limit*, and within *max_size* as :func:`~tidings.store._records.rows_within`
    reads it; page with the last row's ``seq``). A ``visible=False`` row (history only,
    recorded ``sent`` without a route) is never read back: it was not for the person."""
    kind_marks = ",".join("?" * len(kinds))
    status_marks = ",".join("?" * len(statuses))
    cursor = conn.execute(
        f"SELECT {OutboxRow.COLUMNS} FROM outbox WHERE session_id = ? AND seq > ? "
        f"AND visible = 1 AND kind IN ({kind_marks}) AND status IN ({status_marks}) "
        "ORDER BY seq LIMIT ?",
        (session_id, after_seq, *kinds, *statuses, limit))
    rows = rows_within(cursor, max_size)
    cursor.close()
    return rows


def session_last_seq(conn: sqlite3.Connection, session_id: str) -> int | None:
    """The highest ``seq`` assigned in the session (0 before any), or None if it is unknown."""
    row = conn.execute("SELECT last_seq FROM sessions WHERE session_id = ?",
                       (session_id,)).fetchone()
    return None if row is None else int(row[0])


def last_handed_seq(conn: sqlite3.Connection, session_id: str) -> int | None:
    """The highest ``seq`` of a message or notice row of the session that a route is or will
    be handed (0 before any), or None if the session is unknown. Not a ``visible=False`` row
    (history only) nor a ``failed`` one (a stale progress note, a refused delivery): a client
    never gets those, so it could never reach their seq. Nor a progress row: one is never
    replayed, so a client catching up (``after_seq``) never gets one another device got or
    lost."""
    if session_last_seq(conn, session_id) is None:
        return None
    row = conn.execute(
        "SELECT seq FROM outbox WHERE session_id = ? AND visible = 1 AND status != 'failed' "
        "AND kind IN ('message', 'notice') ORDER BY seq DESC LIMIT 1",
        (session_id,)).fetchone()
    return 0 if row is None else int(row[0])


def client_message(conn: sqlite3.Connection, core_id: str, channel: str,
                   conversation_key: str, client_id: str) -> str | None:
    """The outcome recorded for a client message id in the conversation, or None."""
    row = conn.execute(
        "SELECT outcome FROM client_messages WHERE core_id = ? AND channel = ? "
        "AND conversation_key = ? AND client_id = ?",
        (core_id, channel, conversation_key, client_id)).fetchone()
    return None if row is None else str(row[0])


def remember_client_message(core_id: str, channel: str, conversation_key: str, client_id: str,
                            *, session_id: str | None, outcome: str, now: float) -> Call:
    """A :class:`Call` op recording a client message id in the conversation.

    Result: True if it was recorded now, False if it was known already (nothing changes).
    """
    def run(conn: sqlite3.Connection) -> bool:
        cursor = conn.execute(
            "INSERT OR IGNORE INTO client_messages (core_id, channel, conversation_key, "
            "client_id, session_id, outcome, received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (core_id, channel, conversation_key, client_id, session_id, outcome, now))
        return cursor.rowcount == 1
    return Call(run)


def remember_command_message(core_id: str, channel: str, conversation_key: str,
                             client_id: str, *, outcome: str, now: float) -> Call:
    """:func:`remember_client_message` for a command whose durable effect (``/new``,
    ``/clear``, ``/resume``) is written before it in the same transaction: the session
    recorded is the one the conversation is bound to when this op runs (None after a
    ``/clear``), as the command left it.

    Result: True if it was recorded now, False if it was known already (nothing changes).
    """
    def run(conn: sqlite3.Connection) -> bool:
        session_id = session_for_conversation(conn, core_id, channel, conversation_key)
        record = remember_client_message(core_id, channel, conversation_key, client_id,
                                         session_id=session_id, outcome=outcome, now=now)
        return bool(record.fn(conn))
    return Call(run)


def settle_client_message(core_id: str, channel: str, conversation_key: str, client_id: str,
                          *, provisional: str, outcome: str) -> Call:
    """A :class:`Call` op replacing the *provisional* outcome of a client message id with
    *outcome*, known only once the id's effect has run (a stop-button press is recorded
    before it cancels, so a crash in between cannot leave the id unknown).

    Result: True if it changed now, False if the id is unknown or its outcome is not
    *provisional* (nothing changes).
    """
    def run(conn: sqlite3.Connection) -> bool:
        cursor = conn.execute(
            "UPDATE client_messages SET outcome = ? WHERE core_id = ? AND channel = ? "
            "AND conversation_key = ? AND client_id = ? AND outcome = ?",
            (outcome, core_id, channel, conversation_key, client_id, provisional))
        return cursor.rowcount == 1
    return Call(run)
