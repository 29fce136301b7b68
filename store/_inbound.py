"""What the channel layer writes and reads about inbound traffic.

A user's message becomes a ``user`` history row (``persist``: later model context sees it);
resuming a session is an ownership check and a rebind in one transaction, so a session cannot
change hands between the check and the bind; and whether a session has had a turn decides,
durably, whether a prompt is the first of its session.
"""

from __future__ import annotations

import sqlite3
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


def session_has_turns(conn: sqlite3.Connection, session_id: str) -> bool:
    """Whether any turn was ever begun in the session (a read, for ``Store.read``)."""
    return conn.execute("SELECT 1 FROM turns WHERE session_id = ? LIMIT 1",
                        (session_id,)).fetchone() is not None
