"""What the channel layer writes and reads about inbound traffic.

A user's message becomes a ``user`` history row (``persist``: later model context sees it);
resuming a session is an ownership check and a rebind in one transaction, so a session cannot
change hands between the check and the bind; and whether a session has had a turn (other than
those its caller knows never reached the agent) decides whether a prompt is the first of its
session.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection
from typing import Literal

from tidings.store._ops import Call, InsertRows, Op
from tidings.store._sessions import bind_conversation

__all__ = ["ResumeOutcome", "append_user_message", "resume_conversation", "session_has_turns"]

ResumeOutcome = Literal["resumed", "missing", "foreign", "closed"]
"""``resumed``: rebound; ``missing``: no such session; ``foreign``: another core, channel or
conversation owns it; ``closed``: it was cleared (``/clear``) and cannot come back."""

_MESSAGE_COLUMNS = ("message_id", "session_id", "turn_id", "delivery_id", "role", "kind", "text",
                    "policy", "visible", "model_visible", "created_at", "updated_at")


def append_user_message(message_id: str, *, session_id: str, text: str, now: float,
                        turn_id: str | None = None) -> list[Op]:
    """Ops that append the user's *text* to the session's history (role ``user``, kind
    ``text``, policy ``persist``; no delivery)."""
    return [InsertRows("messages", _MESSAGE_COLUMNS, ((
        message_id, session_id, turn_id, None, "user", "text", text, "persist", 1, 1, now,
        now),))]


def resume_conversation(core_id: str, channel: str, conversation_key: str, session_id: str, *,
                        now: float) -> Call:
    """A :class:`Call` op rebinding the conversation to *session_id* only if the conversation
    owns it (same core, channel and conversation key) and it was not cleared.

    Result: a :data:`ResumeOutcome`; nothing is written unless it is ``resumed``.
    """
    rebind = bind_conversation(core_id, channel, conversation_key, session_id, now=now).fn

    def run(conn: sqlite3.Connection) -> ResumeOutcome:
        row = conn.execute(
            "SELECT core_id, channel, conversation_key, state FROM sessions WHERE session_id = ?",
            (session_id,)).fetchone()
        if row is None:
            return "missing"
        if (row[0], row[1], row[2]) != (core_id, channel, conversation_key):
            return "foreign"
        if row[3] == "closed":
            return "closed"
        rebind(conn)
        return "resumed"
    return Call(run)


def session_has_turns(conn: sqlite3.Connection, session_id: str,
                      excluding: Collection[str] = ()) -> bool:
    """Whether any turn but those in *excluding* was ever begun in the session (a read, for
    ``Store.read``).

    *excluding* is what the caller knows about turns no row can tell apart: a channel passes
    the turns it began whose agent never ran (cancelled while they opened), so a session whose
    only turns are those still counts as having none. At most ``len(excluding) + 1`` rows are
    read (by the ``turns_session`` index); the ids are not SQL parameters, so their number is
    not bounded by SQLite's variable limit.
    """
    excluded = frozenset(excluding)
    # Any len(excluded) + 1 rows hold one not excluded, if there is one.
    rows = conn.execute("SELECT turn_id FROM turns WHERE session_id = ? LIMIT ?",
                        (session_id, len(excluded) + 1)).fetchall()
    return any(turn_id not in excluded for (turn_id,) in rows)
