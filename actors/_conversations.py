"""Durable conversation ownership: ``(core_id, channel, conversation_key) -> session_id``.

Live routes are the router's business; this is who owns which session, and it survives a
restart: the same conversation reaches the same session. The first message of a conversation
creates its session and binding in one transaction (two racing first messages end in one
session); ``/new`` creates a fresh session and rebinds; ``/resume`` rebinds to a session the
conversation owns; ``/clear`` forgets the binding and closes the session.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tidings.actors._pipeline import new_id
from tidings.actors._status import MAX_ID_CHARS, check_id, check_session_id
from tidings.errors import SessionClosedError, SessionNotFoundError, ValidationError
from tidings.store import (
    Op,
    bind_conversation,
    forget_conversation,
    queries,
    resolve_conversation,
    resume_conversation,
)

if TYPE_CHECKING:
    from tidings.actors._runtime import Runtime

__all__ = ["MAX_CONVERSATION_KEY_CHARS", "conversation_session", "forget", "new_session",
           "resolve", "resume"]

MAX_CONVERSATION_KEY_CHARS = 8192
"""The most characters a conversation key may have: keys are built by ``conversation_key``
from percent-encoded platform ids (up to 12 characters per character of an id), so far longer
than one id, and stored and indexed whole."""


def _check(channel: object, key: object, *, capped: bool = True) -> tuple[str, str]:
    """*channel* and *key*, or :class:`ValidationError` naming the one that is not a
    non-empty string of valid Unicode within its cap (``MAX_ID_CHARS``,
    :data:`MAX_CONVERSATION_KEY_CHARS`): they are stored, so checked before any write. Not
    *capped*: a lookup of a conversation that exists, which earlier versions stored at any
    length (a long pair no conversation has is simply not found; nothing is written)."""
    return (check_id("channel", channel, max_chars=MAX_ID_CHARS if capped else None),
            check_id("conversation_key", key,
                     max_chars=MAX_CONVERSATION_KEY_CHARS if capped else None))


def _ops(also: object) -> list[Op]:
    """*also* as a list of store ops, or :class:`ValidationError` naming ``also`` (a lone op,
    a string, anything that is not a collection of ops), checked before anything is
    written: the store's own refusal named its ``ops``, an argument no caller passed."""
    if isinstance(also, Op | str | bytes) or not isinstance(also, Sequence):
        raise ValidationError("also", f"must be a list of store ops, got {also!r:.80}")
    ops = list(also)
    for op in ops:
        if not isinstance(op, Op):
            raise ValidationError("also", f"must hold store ops only, got {op!r:.80}")
    return ops


async def resolve(rt: Runtime, channel: str, key: str) -> tuple[str, bool]:
    """The conversation's session, created (with its binding, atomically) if it has none.
    A *channel* or *key* over its cap is refused unless the conversation is bound already
    (stored by an earlier version): its session is then returned."""
    try:
        channel, key = _check(channel, key)
    except ValidationError:
        rt.check_open()
        bound = await conversation_session(rt, channel, key)
        if bound is None:  # a new conversation: refused (naming the field)
            raise
        return bound, False
    rt.check_open()
    [result] = await rt.store.commit([resolve_conversation(
        rt.core_id, channel, key, new_session_id=new_id("session"), now=rt.store.clock())])
    session_id, created = result
    return str(session_id), bool(created)


async def conversation_session(rt: Runtime, channel: str, key: str) -> str | None:
    """The session the conversation is bound to now, or None; never creates one."""
    channel, key = _check(channel, key, capped=False)
    return await rt.store.read(queries.session_for_conversation, rt.core_id, channel, key)


async def new_session(rt: Runtime, channel: str, key: str, *,
                      also: Sequence[Op] = ()) -> str:
    """Create a fresh session owned by the conversation and rebind the conversation to it;
    *also* (store ops) is written in the same transaction, after it.

    The previous session is left as it is (a turn running there goes on; ``/resume`` can
    return to it).
    """
    channel, key = _check(channel, key)
    ops = _ops(also)
    rt.check_open()
    session_id = new_id("session")
    await rt.store.commit([bind_conversation(rt.core_id, channel, key, session_id,
                                             now=rt.store.clock(), create=True), *ops])
    return session_id


async def resume(rt: Runtime, channel: str, key: str, session_id: str, *,
                 also: Sequence[Op] = ()) -> None:
    """Rebind the conversation to *session_id*, which it must own; *also* (store ops) is
    written in the same transaction, after it, refused or not.

    Raises:
      ValidationError: bad arguments (the field is named).
      SessionNotFoundError: the session does not exist or belongs to another core, channel
        or conversation (the same message either way: a conversation cannot probe others'
        session ids).
      SessionClosedError: (a SessionNotFoundError) the conversation owns it, but it was
        cleared.
    """
    # the session must be the conversation's already: nothing new is stored, no cap
    channel, key = _check(channel, key, capped=False)
    check_session_id("session_id", session_id)  # an existing session's: not length-capped
    ops = _ops(also)
    rt.check_open()
    outcome, *_ = await rt.store.commit([resume_conversation(
        rt.core_id, channel, key, session_id, now=rt.store.clock()), *ops])
    if outcome == "closed":
        raise SessionClosedError(f"session {session_id!r} was cleared; it cannot be resumed")
    if outcome != "resumed":
        raise SessionNotFoundError(f"this conversation has no session {session_id!r}")


async def forget(rt: Runtime, channel: str, key: str, *,
                 also: Sequence[Op] = ()) -> str | None:
    """Drop the conversation's binding and close its session; return that session's id (None
    when the conversation had none). The next message starts a new session. Any length (a
    lookup: see :func:`_check`). *also* (store ops) is written in the same transaction."""
    channel, key = _check(channel, key, capped=False)
    ops = _ops(also)
    rt.check_open()
    forgotten, *_ = await rt.store.commit([forget_conversation(rt.core_id, channel, key,
                                                               now=rt.store.clock()), *ops])
    return forgotten
