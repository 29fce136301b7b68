"""Sessions, turns and durable conversation bindings as write ops.

Live routes are in memory (the router); what is durable here is ownership:
``(core_id, channel, conversation_key) -> session_id``. The first message of a conversation
creates the session and its binding in one transaction, and a race of two first messages ends
in one session (:func:`resolve_conversation`).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Mapping
from typing import Any

from tidings.store._ops import Call, InsertRows, Op, UpdateRows

__all__ = [
    "begin_turn",
    "bind_conversation",
    "create_session",
    "end_turn",
    "forget_conversation",
    "resolve_conversation",
]

_SESSION_COLUMNS = ("session_id", "core_id", "channel", "conversation_key", "parent_session_id",
                    "metadata", "created_at", "updated_at")


def create_session(session_id: str, *, core_id: str, channel: str | None, now: float,
                   parent_session_id: str | None = None, conversation_key: str | None = None,
                   metadata: Mapping[str, Any] | None = None) -> list[Op]:
    """Ops that create a session and record ``session.created``."""
    row = (session_id, core_id, channel, conversation_key, parent_session_id,
           json.dumps(dict(metadata or {})), now, now)
    data = json.dumps({"channel": channel, "parent_session_id": parent_session_id,
                       "conversation_key": conversation_key})
    return [InsertRows("sessions", _SESSION_COLUMNS, (row,)),
            _event("session.created", session_id, data, now)]


def begin_turn(turn_id: str, *, session_id: str, slot: str, mode: str, now: float,
               message_id: str | None = None) -> list[Op]:
    """The ops recording that a turn started (``running``) in *slot* of its session; the turn
    row is what recovery reads to end turns a crash left running, and
    :func:`end_turn` records its one terminal state."""
    return [InsertRows("turns", ("turn_id", "session_id", "slot", "mode", "status", "message_id",
                                 "started_at"),
                       ((turn_id, session_id, slot, mode, "running", message_id, now),))]


def end_turn(turn_id: str, *, status: str, now: float, reason: str | None = None,
             error: str | None = None) -> list[Op]:
    """Record a turn's one terminal state (a second end changes nothing)."""
    return [UpdateRows("turns", "turn_id", ("status", "reason", "error", "ended_at"),
                       ((turn_id, status, reason, error, now),), guard="status = 'running'")]


def resolve_conversation(core_id: str, channel: str, conversation_key: str, *,
                         new_session_id: str, now: float) -> Call:
    """A :class:`Call` op returning ``(session_id, created)`` for the conversation.

    If the conversation has no binding yet, *new_session_id* is created and bound in the same
    transaction; otherwise the bound session is returned and nothing is written.
    """
    def run(conn: sqlite3.Connection) -> tuple[str, bool]:
        row = conn.execute(
            "SELECT session_id FROM conversation_bindings "
            "WHERE core_id = ? AND channel = ? AND conversation_key = ?",
            (core_id, channel, conversation_key)).fetchone()
        if row is not None:
            return row[0], False
        _create_bound_session(conn, core_id, channel, conversation_key, new_session_id, now)
        return new_session_id, True
    return Call(run)


def bind_conversation(core_id: str, channel: str, conversation_key: str, session_id: str, *,
                      now: float, create: bool = False) -> Call:
    """A :class:`Call` op (re)binding the conversation to *session_id* (``/new``, ``/resume``).

    With ``create=True`` the session is created first, owned by the conversation.
    """
    def run(conn: sqlite3.Connection) -> None:
        if create:
            _create_bound_session(conn, core_id, channel, conversation_key, session_id, now)
            return
        conn.execute(
            "INSERT INTO conversation_bindings (core_id, channel, conversation_key, session_id, "
            "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (core_id, channel, conversation_key) "
            "DO UPDATE SET session_id = excluded.session_id, updated_at = excluded.updated_at",
            (core_id, channel, conversation_key, session_id, now, now))
        conn.execute(
            "INSERT INTO events (type, session_id, data, created_at) VALUES (?, ?, ?, ?)",
            ("conversation.bound", session_id,
             json.dumps({"channel": channel, "conversation_key": conversation_key}), now))
    return Call(run)


def forget_conversation(core_id: str, channel: str, conversation_key: str, *,
                        now: float) -> Call:
    """A :class:`Call` op dropping the binding (``/clear``): the next message starts afresh."""
    def run(conn: sqlite3.Connection) -> str | None:
        row = conn.execute(
            "DELETE FROM conversation_bindings "
            "WHERE core_id = ? AND channel = ? AND conversation_key = ? RETURNING session_id",
            (core_id, channel, conversation_key)).fetchone()
        if row is None:
            return None
        conn.execute("UPDATE sessions SET state = 'closed', updated_at = ? WHERE session_id = ?",
                     (now, row[0]))
        conn.execute(
            "INSERT INTO events (type, session_id, data, created_at) VALUES (?, ?, ?, ?)",
            ("conversation.forgotten", row[0],
             json.dumps({"channel": channel, "conversation_key": conversation_key}), now))
        return str(row[0])
    return Call(run)


def _create_bound_session(conn: sqlite3.Connection, core_id: str, channel: str,
                          conversation_key: str, session_id: str, now: float) -> None:
    for op in create_session(session_id, core_id=core_id, channel=channel, now=now,
                             conversation_key=conversation_key):
        type(op).run_group(conn, [op])
    bind: Callable[[sqlite3.Connection], Any] = bind_conversation(
        core_id, channel, conversation_key, session_id, now=now).fn
    bind(conn)


def _event(kind: str, session_id: str, data: str, now: float) -> InsertRows:
    return InsertRows("events", ("type", "session_id", "data", "created_at"),
                      ((kind, session_id, data, now),), key_index=None)
