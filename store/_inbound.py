"""What the channel layer writes and reads about inbound traffic.

A user's message becomes a ``user`` history row (``persist``: later model context sees it);
resuming a session is an ownership check and a rebind in one transaction, so a session cannot
change hands between the check and the bind; and whether a session has had a turn (other than
those its caller knows never reached the agent) decides whether a prompt is the first of its
session.

An accepted message is also *held* (``inbound_messages``) until it is dealt with: answered by
a turn that ended while its process ran, told it was not (a notice), or cleared. The release is
written in the same transaction as the turn's end or the notice, so a crash leaves a message
either held or dealt with, never both; the next start tells the user about every message an
earlier process still held (:func:`held_inbound`). The answer a session command owes is held
the same way, with the command's effect, until it is written (:func:`hold_command_answer`),
and the next start sends it: as the command's answer, also into the session ``/clear`` closed.
One with no session to go into (a *direct* answer) is owed on the command's message id record
instead (:func:`owe_direct_answer`, schema v8), until it went out: the platform's retry of the
id after a restart takes it (:func:`take_direct_answer`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Collection, Iterable
from typing import Literal

import attrs

from tidings.store._ops import Call, Execute, InsertRows, Op
from tidings.store._queries import session_for_conversation
from tidings.store._sessions import bind_conversation

__all__ = [
    "AnswerNotice",
    "HeldInbound",
    "ResumeOutcome",
    "append_user_message",
    "held_inbound",
    "hold_command_answer",
    "hold_inbound",
    "is_held",
    "owe_direct_answer",
    "owed_direct_answer",
    "paid_direct_answer",
    "release_inbound",
    "resume_conversation",
    "resume_outcome",
    "session_has_turn",
    "session_has_turns",
    "take_direct_answer",
]

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
        outcome = resume_outcome(conn, core_id, channel, conversation_key, session_id)
        if outcome == "resumed":
            rebind(conn)
        return outcome
    return Call(run)


def resume_outcome(conn: sqlite3.Connection, core_id: str, channel: str,
                   conversation_key: str, session_id: str) -> ResumeOutcome:
    """What :func:`resume_conversation` of *session_id* does (``resumed``: it may rebind),
    without rebinding (a read)."""
    row = conn.execute(
        "SELECT core_id, channel, conversation_key, state FROM sessions WHERE session_id = ?",
        (session_id,)).fetchone()
    if row is None:
        return "missing"
    if (row[0], row[1], row[2]) != (core_id, channel, conversation_key):
        return "foreign"
    if row[3] == "closed":
        return "closed"
    return "resumed"


def session_has_turn(conn: sqlite3.Connection, session_id: str, turn_id: str) -> bool:
    """Whether the turn *turn_id* was begun in the session (a read, for ``Store.read``)."""
    return conn.execute("SELECT 1 FROM turns WHERE turn_id = ? AND session_id = ?",
                        (turn_id, session_id)).fetchone() is not None


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


_INBOUND_COLUMNS = ("inbound_id", "session_id", "channel", "message_id", "notice", "claimant",
                    "received_at")
_RELEASE_CHUNK = 500
"""Ids per ``DELETE``: well under SQLite's bound on parameters."""


@attrs.frozen
class HeldInbound:
    """An accepted message an earlier process held when it stopped (see :func:`held_inbound`)."""

    position: int
    """Its place in arrival order (the row's rowid): where the next page starts."""
    inbound_id: str
    session_id: str
    channel: str | None
    message_id: str | None
    notice: str
    """What to tell the session: the message was not answered (or a command's answer)."""
    session_open: bool
    """The session exists and was not cleared (``/clear``), or exists and this is a command's
    answer (``/clear`` answers in the session it closes): only then is it told."""
    command: str | None = None
    """The session command whose answer *notice* is (schema v7), or None: a message."""


_HOLD_SQL = (f"INSERT INTO inbound_messages ({', '.join(_INBOUND_COLUMNS)}) "
             f"SELECT {', '.join('?' * len(_INBOUND_COLUMNS))} "
             f"WHERE EXISTS (SELECT 1 FROM sessions WHERE session_id = ? AND state != 'closed') "
             f"RETURNING inbound_id")


def hold_inbound(inbound_id: str, *, session_id: str, channel: str | None,
                 message_id: str | None, notice: str, claimant: str, now: float) -> list[Op]:
    """Ops that hold an accepted message for the process *claimant* until it is released.
    Result: ``[(inbound_id,)]``, or ``[]`` (nothing written) when *session_id* does not exist
    or is closed (``/clear``): recovery could never tell such a hold (it releases those
    without a notice), so it is not written."""
    return [Execute(_HOLD_SQL, (inbound_id, session_id, channel, message_id, notice, claimant,
                                now, session_id))]


AnswerNotice = str | Callable[[sqlite3.Connection], str]
"""The answer a session command owes: its text, or a function of the transaction's connection
that reads it (the answer to ``/resume`` depends on how the rebind went)."""

_ANSWER_COLUMNS = (*_INBOUND_COLUMNS, "command")
_HOLD_ANSWER_SQL = (f"INSERT INTO inbound_messages ({', '.join(_ANSWER_COLUMNS)}) "
                    f"SELECT {', '.join('?' * len(_ANSWER_COLUMNS))} "
                    f"WHERE EXISTS (SELECT 1 FROM sessions WHERE session_id = ? "
                    f"AND core_id = ? AND channel = ? AND conversation_key = ? "
                    f"AND (? OR state = 'closed')) RETURNING inbound_id")


def hold_command_answer(inbound_id: str, *, core_id: str, channel: str, conversation_key: str,
                        command: str, message_id: str | None, notice: AnswerNotice,
                        claimant: str, now: float, cleared: str | None = None,
                        owe_direct: bool = False) -> Call:
    """A :class:`Call` op holding, as *inbound_id*, the answer a session command (*command*,
    its message id *message_id*) owes, in the session the conversation is bound to when it
    runs, or, given *cleared* (``/clear``), in that session of the conversation once the
    transaction closed it. Written with the command's effect, in its transaction, so a crash
    before the answer is written leaves it held, and the next start's recovery sends *notice*
    (:func:`held_inbound`), also into a closed session; the answer, written, releases it in
    its own transaction.

    Without *cleared*, a conversation with no session has no session to hold it in: its
    answer is a direct one. With *owe_direct* (and *message_id*), it is then owed on the
    record of *message_id*, which an op before this one in the transaction wrote
    (:func:`owe_direct_answer`): a crash before it went out leaves it there, for the
    platform's retry of the id.

    Result: the session it is held in, or None (the conversation has no session, or
    *cleared* is not one of its sessions, closed: nothing is held)."""
    def run(conn: sqlite3.Connection) -> str | None:
        held_in = cleared
        if held_in is None:
            held_in = session_for_conversation(conn, core_id, channel, conversation_key)
            if held_in is None:
                if owe_direct and message_id is not None:
                    text = notice if isinstance(notice, str) else notice(conn)
                    owe_direct_answer(conn, core_id, channel, conversation_key, message_id,
                                      text=text, command=command, claimant=claimant)
                return None
        text = notice if isinstance(notice, str) else notice(conn)
        held = conn.execute(_HOLD_ANSWER_SQL, (
            inbound_id, held_in, channel, message_id, text, claimant, now, command,
            held_in, core_id, channel, conversation_key, cleared is None)).fetchone()
        return None if held is None else held_in
    return Call(run)


def is_held(conn: sqlite3.Connection, inbound_id: str) -> bool:
    """Whether *inbound_id* is still held (a read, for ``Store.read``)."""
    return conn.execute("SELECT 1 FROM inbound_messages WHERE inbound_id = ?",
                        (inbound_id,)).fetchone() is not None


def release_inbound(inbound_ids: Iterable[str], *,
                    session_id: str | None = None) -> list[Op]:
    """Ops that release held messages (dealt with); ids not held are ignored, and so are
    those of other sessions than *session_id* when it is given (what a session's reply, turn
    or notice deals with is that session's messages only)."""
    ids = list(dict.fromkeys(inbound_ids))
    scope, extra = ("", ()) if session_id is None else (" AND session_id = ?", (session_id,))
    return [Execute(f"DELETE FROM inbound_messages WHERE inbound_id IN "
                    f"({', '.join('?' * len(chunk))}){scope}", (*chunk, *extra))
            for chunk in (ids[at:at + _RELEASE_CHUNK]
                          for at in range(0, len(ids), _RELEASE_CHUNK))]


def held_inbound(conn: sqlite3.Connection, claimant: str, after: int,
                 limit: int) -> list[HeldInbound]:
    """Messages (and command answers) held by processes other than *claimant* (stopped ones:
    a database has one runtime at a time), in arrival order after position *after*; at most
    *limit*."""
    rows = conn.execute(
        "SELECT i.rowid, i.inbound_id, i.session_id, i.channel, i.message_id, i.notice, "
        "s.state IS NOT NULL AND (s.state != 'closed' OR i.command IS NOT NULL), i.command "
        "FROM inbound_messages AS i LEFT JOIN sessions AS s ON s.session_id = i.session_id "
        "WHERE i.claimant != ? AND i.rowid > ? ORDER BY i.rowid LIMIT ?",
        (claimant, after, limit)).fetchall()
    return [HeldInbound(int(row[0]), row[1], row[2], row[3], row[4], row[5], bool(row[6]),
                        row[7]) for row in rows]


_ID_RECORD = "core_id = ? AND channel = ? AND conversation_key = ? AND client_id = ?"
"""The record of one message id (``client_messages``), by its primary key."""


def owe_direct_answer(conn: sqlite3.Connection, core_id: str, channel: str,
                      conversation_key: str, message_id: str, *, text: str, command: str,
                      claimant: str) -> bool:
    """Record, in the write transaction on *conn*, on the record of *message_id* (written
    earlier in it) that its command (*command*) owes the direct answer *text*, to be sent by
    the process *claimant* (schema v8). True if the record exists (it was written). Run by
    :func:`hold_command_answer` when the conversation has no session to hold it in."""
    cursor = conn.execute(
        f"UPDATE client_messages SET answer = ?, answer_command = ?, answer_claimant = ? "
        f"WHERE {_ID_RECORD}", (text, command, claimant, core_id, channel, conversation_key,
                                message_id))
    return cursor.rowcount == 1


def owed_direct_answer(conn: sqlite3.Connection, core_id: str, channel: str,
                       conversation_key: str, message_id: str,
                       claimant: str) -> bool:
    """Whether the record of *message_id* owes a direct answer that a process other than
    *claimant* was to send (a stopped one: see :func:`take_direct_answer`). A read, for
    ``Store.read``."""
    row = conn.execute(
        f"SELECT 1 FROM client_messages WHERE {_ID_RECORD} AND answer IS NOT NULL "
        f"AND answer_claimant IS NOT ?",
        (core_id, channel, conversation_key, message_id, claimant)).fetchone()
    return row is not None


def take_direct_answer(core_id: str, channel: str, conversation_key: str, message_id: str, *,
                       claimant: str) -> Call:
    """A :class:`Call` op giving the process *claimant* the direct answer the record of
    *message_id* owes, if another process was to send it (a database has one runtime at a
    time: the other stopped before it did). Taken in the writer, so of two callers one gets
    it; it stays owed (the text stays) until :func:`paid_direct_answer`.

    Result: ``(text, command)``, or None (nothing owed, or owed to *claimant* already)."""
    def run(conn: sqlite3.Connection) -> tuple[str, str] | None:
        row = conn.execute(
            f"UPDATE client_messages SET answer_claimant = ? WHERE {_ID_RECORD} "
            f"AND answer IS NOT NULL AND answer_claimant IS NOT ? "
            f"RETURNING answer, answer_command",
            (claimant, core_id, channel, conversation_key, message_id, claimant)).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))
    return Call(run)


def paid_direct_answer(core_id: str, channel: str, conversation_key: str,
                       message_id: str) -> Call:
    """A :class:`Call` op clearing the direct answer the record of *message_id* owed: it
    went out. Result: True if one was owed."""
    def run(conn: sqlite3.Connection) -> bool:
        cursor = conn.execute(
            f"UPDATE client_messages SET answer = NULL, answer_command = NULL, "
            f"answer_claimant = NULL WHERE {_ID_RECORD} AND answer IS NOT NULL",
            (core_id, channel, conversation_key, message_id))
        return cursor.rowcount == 1
    return Call(run)
