"""Running channel commands at once (never queued behind a turn) and answering them.

An answer goes into the conversation's session through the runtime's outbox when the
conversation has one (in order with the session's other deliveries); a command that needs no
session (``/who``, ``/status``, ``/help``, a refused ``/cancel`` before any message) creates
none, and its answer goes straight to the channel's ``deliver()`` with ``session_id=None``.
Such a direct answer to ``/cancel``, ``/clear`` or ``/resume``, whose message id was recorded
with the effect, that does not go out is owed to the platform's retry of the id
(:mod:`._owed_answers`).
No answer contains an absolute path: the workspace appears by its basename, and a session id
the user typed is never echoed back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

import trio

from tidings.channels._commands import (
    Command,
    InvalidCommand,
    help_text,
    status_text,
    who_text,
)
from tidings.channels._directory import Conversation
from tidings.channels._handback import requeue_unrouted
from tidings.errors import SessionClosedError, SessionNotFoundError

if TYPE_CHECKING:
    from tidings.channels._base import ChannelBase
    from tidings.store import Op

__all__ = ["Known", "run_cancel", "run_command"]

Known = Callable[[], Awaitable[object]]
"""The read of a command's message id record: its outcome, or None when it is not known."""

CLEARED = "Cleared. Your next message starts a new session."
CANCELLED = "Cancelled the running request."
NOTHING_TO_CANCEL = "Nothing to cancel."
NEW_SESSION = "Started a new session."
NO_SUCH_SESSION = "This conversation has no such session."
CLEARED_SESSION = "That session was cleared; it cannot be resumed."


async def run_command(channel: ChannelBase, conversation: Conversation,
                      command: Command | InvalidCommand, *, record: Sequence[Op] = (),
                      known: Known | None = None, owed_to: str | None = None) -> bool:
    """Run *command* for *conversation* and send its answer; False, with nothing done and no
    answer, when *known* (the read of a session command's message id record, given for
    ``/cancel``, ``/new``, ``/clear`` and ``/resume``) finds it handled already.

    *record*: store ops recording the command's message id, written in the transaction of
    the durable effect of ``/new``, ``/clear`` and ``/resume`` (refused or not), so a crash
    keeps both or neither: the platform's resend is then a duplicate, or the command's only
    run; and before ``/cancel`` cancels (see :func:`run_cancel`). The other commands change
    nothing; their caller records the id after.

    *known* is awaited under the conversation's lock, with the effect: read before it, a
    message the platform sent after the command, handled during the read, started its turn
    in the session the command then left (``/new``), or cleared and cancelled (``/clear``).

    *owed_to*: the message id *record* records, when the platform's retry of it is looked up
    (``dedupe_message_ids``): a direct answer (no session) of ``/clear`` or ``/resume`` that
    does not go out is then owed to that retry (see :func:`_answer`)."""
    directory, dispatch = channel.directory, channel.dispatch
    name = command.name
    if isinstance(command, InvalidCommand):
        session_id = await directory.lookup(conversation)
        await channel.answer(conversation, session_id, command.message, command=name)
        return True
    if name in ("help", "who", "status"):
        session_id = await directory.lookup(conversation)
        if name == "help":
            text = help_text()
        elif name == "who":
            text = who_text(channel.config, session_id=session_id,
                            workspace=channel.runtime.workspace)
        else:
            text = status_text(channel.config, session_id=session_id,
                               turn_running=session_id is not None
                               and dispatch.turn_running(session_id))
        await channel.answer(conversation, session_id, text, command=name)
        return True
    if name == "cancel":
        return await run_cancel(channel, conversation, record=record, known=known,
                                owed_to=owed_to)
    refusal = None
    cleared_no_session = False
    async with directory.lock(conversation):
        if known is not None and await known() is not None:
            return False
        if name == "clear":
            dispatch.cancel(conversation, "clear")
            dropped = dispatch.drop_pending(conversation)
            old = await directory.forget(conversation, also=record)
            # Dealt with at the user's request (were this cut short, recovery would find
            # them in a cleared session, and release them without a word).
            await channel.runtime.release_inbound(dropped)
            if old is not None:
                await channel.answer(conversation, old, CLEARED, command=name)
            cleared_no_session = old is None
        elif name == "new":
            session_id = await directory.new(conversation, also=record)
            await channel._answer_switch(conversation, session_id, NEW_SESSION, command=name)
        else:
            refusal = await _resume(channel, conversation, command, record)
    if cleared_no_session:
        # No session: a direct answer, which waits for the answers still on their way (see
        # ChannelBase._deliver_direct): outside the lock, so no message waits for it.
        await _answer(channel, conversation, None, CLEARED, command=name, owed_to=owed_to)
        return True
    if refusal is None:
        return True
    # A refused /resume changed nothing; its answer goes to the current session, looked up
    # outside the lock (a lookup that reads the store takes it).
    await _answer_current(channel, conversation, refusal, command="resume", owed_to=owed_to)
    return True


async def run_cancel(channel: ChannelBase, conversation: Conversation, *,
                     record: Sequence[Op] = (), known: Known | None = None,
                     owed_to: str | None = None) -> bool:
    """``/cancel`` from an allowed sender: cancel the oldest request not yet over in each of
    *conversation*'s sessions (see ``Dispatch.cancel``) and answer; False, with nothing done
    and no answer, when *known* (the read of its message id's record) finds it handled.

    Decided as it is received: the conversation's lock, which a message takes to start its
    turn, is taken before the first checkpoint, and the hand-back due, the read (*known*),
    the write of *record* (its message id) and the cancel all run under it. A message the
    platform sent after the ``/cancel``, handled during those awaits, waits for the lock,
    rather than start a turn that the ``/cancel`` sent before it then cancels. The id is
    written before the cancel: a cancel dies with its process anyway, but an id recorded
    after it could be lost to a crash in between, and the platform's resend then cancelled
    the turn of a message sent since. The session the answer goes to is looked up after
    the lock is let go (a lookup that reads the store takes it). *owed_to*: as for
    :func:`run_command`."""
    directory = channel.directory
    async with directory.lock(conversation):
        await channel._hand_back_if_due(conversation, locked=True)
        if known is not None and await known() is not None:
            return False
        # Bounded (one store request), and not cut off once the id is being written: it may
        # commit all the same, and the platform's resend would then be a duplicate that
        # cancels nothing while the turn it was to stop runs on.
        with trio.CancelScope(shield=True):
            if record:
                await channel.runtime.store.commit(list(record))
            done = channel.dispatch.cancel(conversation, "cancel_command")
    await _answer_current(channel, conversation, CANCELLED if done else NOTHING_TO_CANCEL,
                          command="cancel", owed_to=owed_to)
    return True


async def _answer(channel: ChannelBase, conversation: Conversation, session_id: str | None,
                  text: str, *, command: str, owed_to: str | None) -> None:
    """``channel.answer``, for a command whose message id was recorded before its answer.
    A direct answer (no session) that does not go out (``deliver()`` raised, or the call was
    cancelled) is owed to the platform's retry of *owed_to*, if given: that retry is a
    ``duplicate`` (the command must not run again), which then gets it. An answer in a
    session is a durable outbox row, owed to nobody."""
    try:
        await channel.answer(conversation, session_id, text, command=command)
    except BaseException:
        if session_id is None and owed_to is not None:
            channel.owed_answers.owe(conversation.key, owed_to, text, command)
        raise


async def _answer_current(channel: ChannelBase, conversation: Conversation, text: str, *,
                          command: str, owed_to: str | None) -> None:
    """:func:`_answer` in the conversation's current session, looked up now (outside the
    conversation's lock, which the lookup may take, and another message may hold). A lookup
    that fails or is cancelled (the platform gave up on the request) leaves the answer owed
    to the retry of *owed_to*, as a direct answer: the id is recorded, so that retry is a
    ``duplicate``, and the answer was never given."""
    try:
        session_id = await channel.directory.lookup(conversation)
    except BaseException:
        if owed_to is not None:
            channel.owed_answers.owe(conversation.key, owed_to, text, command)
        raise
    await _answer(channel, conversation, session_id, text, command=command, owed_to=owed_to)


async def _resume(channel: ChannelBase, conversation: Conversation,
                  command: Command, record: Sequence[Op]) -> str | None:
    """Resume (under the conversation's lock) and answer; the refusal to send, if refused.

    The session is bound inside ``hold_binds`` and its ``unrouted`` rows are handed back there
    (a session the directory forgot may have got one, or be writing one, since the
    conversation last spoke): they go out before the answer and anything newer, not after it
    at the conversation's next message. Every channel does this, also one that hands rows back
    elsewhere (the gateway, at each client's hello): a hello hands back only a session not
    bound yet, and the resumed one is bound from here on."""
    target = command.argument or ""
    rt = channel.runtime
    try:
        async with rt.hold_binds(channel):
            await channel.directory.resume(conversation, target, also=record)
            await requeue_unrouted(rt, target)
    except SessionNotFoundError as exc:
        return CLEARED_SESSION if isinstance(exc, SessionClosedError) else NO_SUCH_SESSION
    await channel._answer_switch(conversation, target, f"Resumed session {target}.",
                                command="resume")
    return None
