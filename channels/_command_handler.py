"""Running channel commands at once (never queued behind a turn) and answering them.

An answer goes into the conversation's session through the runtime's outbox when the
conversation has one (in order with the session's other deliveries); a command that needs no
session (``/who``, ``/status``, ``/help``, a refused ``/cancel`` before any message) creates
none, and its answer goes straight to the channel's ``deliver()`` with ``session_id=None``.
Such a direct answer to ``/cancel``, ``/clear`` or ``/resume``, whose message id was recorded
with the effect, that does not go out is owed to the platform's retry of the id
(:mod:`._owed_answers`).

The answer in a session of ``/new``, ``/resume``, ``/cancel`` and ``/clear`` whose message id
is recorded (the platform's retry is then a ``duplicate``, which runs nothing) is *held* with
that record and the command's effect, in their transaction, and released in the transaction
that writes the answer: a crash between the two (the effect done, the answer not written)
leaves it held, and the next start sends it into its session (the recovery of held
messages; ``/clear``'s into the session it closed), whence the conversation's next message
(the retry) hands it back. Once the effect's write is on its way, neither it nor the
answer's write is cut off (:func:`_uncut`): a caller cancelled meanwhile (the platform gave
up, a stop) returns once the answer is written, not leaving it held until a restart. Not a
direct answer (no session): it has no session to be held in, so it is owed on the command's
message id record instead, written with it (schema v8), and cleared once it went out: after
a crash before that, the platform's retry of the id (a ``duplicate``) is sent it (see
:mod:`._owed_answers`).
No answer contains an absolute path: the workspace appears by its basename, and a session id
the user typed is never echoed back.
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Iterator, Sequence
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
from tidings.channels._owed_answers import paid_stored
from tidings.errors import SessionClosedError, SessionNotFoundError, TidingsError
from tidings.store._inbound import ResumeOutcome, resume_outcome
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.channels._base import ChannelBase
    from tidings.store import Op
    from tidings.store._inbound import AnswerNotice

__all__ = ["HoldAnswer", "Known", "release_cancelled", "run_cancel", "run_command"]

log = logging.getLogger("tidings.channels")

Known = Callable[[], Awaitable[object]]
"""The read of a command's message id record: its outcome, or None when it is not known."""

HoldAnswer = Callable[["AnswerNotice", str, "str | None"], "tuple[str, Op]"]
"""Makes the hold of a command's answer (its text, or how to read it in the transaction), of
the command named, in the session ``/clear`` closes (else None: the conversation's):
``(inbound_id, op)``, the op to write with the command's effect (see
``ChannelBase._answer_hold``)."""

CLEARED = "Cleared. Your next message starts a new session."
CANCELLED = "Cancelled the running request."
NOTHING_TO_CANCEL = "Nothing to cancel."
NEW_SESSION = "Started a new session."
NO_SUCH_SESSION = "This conversation has no such session."
CLEARED_SESSION = "That session was cleared; it cannot be resumed."


async def run_command(channel: ChannelBase, conversation: Conversation,
                      command: Command | InvalidCommand, *, record: Sequence[Op] = (),
                      known: Known | None = None, hold: HoldAnswer | None = None,
                      owed_to: str | None = None) -> bool:
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

    ``/clear`` cancels the running turns and drops the waiting ones only once its write (the
    forget, with *record* and the hold) committed: a write that fails raises with nothing
    cancelled, the conversation still in its session, for the platform's retry to clear. A
    waiting turn its worker began during that write is the running one by then: cancelled
    (``clear``), its messages in the cleared session's history, as if it had been running
    when the command came.

    *hold*: given with *record*, the answer in a session is held with it (see the module
    docstring) and released by the answer's own write.

    *owed_to*: the message id *record* records, when the platform's retry of it is looked up
    (``dedupe_message_ids``; a gateway client's resend): a direct answer (no session) of
    ``/clear`` or ``/resume`` that does not go out is then owed to that retry (see
    :func:`_answer`)."""
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
    refusal: str | None = None
    held_in: tuple[str, str] | None = None  # where a refused /resume's answer is held
    stored = False  # a direct answer owed on the id's record (see _answer)
    cleared_no_session = False
    async with directory.lock(conversation):
        if known is not None and await known() is not None:
            return False
        if name == "clear":
            held, also = await _held_clear(channel, conversation, hold, record)
            with _uncut():
                old = await directory.forget(conversation, also=also)
                # Only once the clear is durable (no checkpoint in between): a write that
                # failed raised above, leaving the turns running and waiting as they were,
                # in the session it kept. Those of this moment are the ones it clears.
                dispatch.cancel(conversation, "clear")
                dropped = dispatch.drop_pending(conversation)
                # Dealt with at the user's request (were this cut short, recovery would find
                # them in a cleared session, and release them without a word).
                await channel.runtime.release_inbound(dropped)
                if old is not None:
                    with _owed_if_cut(channel, conversation, owed_to, CLEARED, name, old,
                                      held):
                        await channel.answer(conversation, old, CLEARED, command=name,
                                             settles=held)
            cleared_no_session = old is None
            stored = bool(held) and owed_to is not None
        elif name == "new":
            held, also = _held(hold, NEW_SESSION, name, record)
            with _uncut():
                session_id = await directory.new(conversation, also=also)
                with _owed_if_cut(channel, conversation, owed_to, NEW_SESSION, name,
                                  session_id, held):
                    await channel._answer_switch(conversation, session_id, NEW_SESSION,
                                                 command=name, settles=held)
        else:
            refusal, held_in, stored = await _resume(channel, conversation, command, record,
                                                     hold, owed_to)
    if cleared_no_session:
        # No session: a direct answer, which waits for the answers still on their way (see
        # ChannelBase._deliver_direct): outside the lock, so no message waits for it.
        await _answer(channel, conversation, None, CLEARED, command=name, owed_to=owed_to,
                      stored=stored)
        return True
    if refusal is None:
        return True
    # A refused /resume changed nothing; its answer goes to the current session, looked up
    # outside the lock (a lookup that reads the store takes it): the one it is held in, if
    # it is held.
    await _answer_current(channel, conversation, refusal, command="resume", owed_to=owed_to,
                          held=held_in, stored=stored)
    return True


def _uncut() -> trio.CancelScope:
    """Around the write of a session command's effect and that of its answer (in a session):
    once the effect's write is on its way it may commit, and a caller cut off then (the
    platform gave up on the request, a stop) left the answer held until the next start,
    while the platform's retry of the id, a ``duplicate``, found nothing owed. Bounded (a
    few store requests): the caller's cancel takes effect once the answer is written (or its
    write failed: see :func:`_owed_if_cut`). Not around the hand-back of a resumed session's
    ``unrouted`` rows, however many: cut off, it stops between pages (see :func:`_resume`)."""
    return trio.CancelScope(shield=True)


@contextlib.contextmanager
def _owed_if_cut(channel: ChannelBase, conversation: Conversation, owed_to: str | None,
                 text: str, command: str, session_id: str,
                 held: tuple[str, ...]) -> Iterator[None]:
    """Around the write of an answer held (under *held*) in *session_id*: should it fail
    (or the call be cancelled), the answer is owed to the retry of *owed_to* too, if given,
    so it need not wait for the next start (see ``ChannelBase._pay_owed``)."""
    try:
        yield
    except BaseException:
        if owed_to is not None and held:
            channel.owed_answers.owe(conversation.key, owed_to, text, command,
                                     held=(session_id, held[0]))
        raise


def _held(hold: HoldAnswer | None, notice: AnswerNotice, command: str, record: Sequence[Op],
          cleared: str | None = None) -> tuple[tuple[str, ...], list[Op]]:
    """The inbound id the answer of *command* is held under (none without *hold*) and the ops
    to write with the command's effect: *record*, then the hold (in *cleared*: see
    :data:`HoldAnswer`)."""
    if hold is None:
        return (), list(record)
    inbound_id, op = hold(notice, command, cleared)
    return (inbound_id,), [*record, op]


async def _held_clear(channel: ChannelBase, conversation: Conversation,
                      hold: HoldAnswer | None, record: Sequence[Op]
                      ) -> tuple[tuple[str, ...], list[Op]]:
    """:func:`_held` for ``/clear`` (under the conversation's lock): held in the session it
    closes, read now (under the lock nothing rebinds it before the forget), and only once it
    is closed; when there is none, its answer is a direct one, which the hold owes on the
    id's record instead (see ``hold_command_answer``)."""
    if hold is None:
        return (), list(record)
    bound = await channel.runtime.conversation_session(channel.config.name, conversation.key)
    return _held(hold, CLEARED, "clear", record, bound)


async def run_cancel(channel: ChannelBase, conversation: Conversation, *,
                     record: Sequence[Op] = (), known: Known | None = None,
                     hold: HoldAnswer | None = None, owed_to: str | None = None) -> bool:
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
    the turn of a message sent since. The messages of a turn (running or waiting) it cancels
    are released then, under the lock (a crash after it must not tell the user they went
    unanswered). The session the answer goes to is looked up after the lock is let go (a
    lookup that reads the store takes it), unless that write found the conversation with
    none: the answer then goes direct, owed on the id's record (see
    :func:`_answer_current`). *hold*, *owed_to*: as for
    :func:`run_command`; the answer held with the id says what there was to cancel before it
    was written (after a crash, whatever ran then was stopped by it). Cut off while it pays
    the answers owed before it, its own is owed to the retry of *owed_to* too."""
    directory = channel.directory
    held_in = None
    stored = False  # its direct answer owed on the id's record (no session to hold it in)
    async with directory.lock(conversation):
        await channel._hand_back_if_due(conversation, locked=True)
        if known is not None and await known() is not None:
            return False
        busy = _busy(channel, conversation)
        held, ops = _held(hold, CANCELLED if busy else NOTHING_TO_CANCEL, "cancel", record)
        # Bounded (one store request), and not cut off once the id is being written: it may
        # commit all the same, and the platform's resend would then be a duplicate that
        # cancels nothing while the turn it was to stop runs on.
        with trio.CancelScope(shield=True):
            if ops:
                results = await channel.runtime.store.commit(ops)
                if held and results[-1] is not None:
                    held_in = (results[-1], held[0])
                stored = bool(held) and results[-1] is None and owed_to is not None
            done = channel.dispatch.cancel(conversation, "cancel_command")
            await release_cancelled(channel, conversation)
    text = CANCELLED if done else NOTHING_TO_CANCEL
    try:
        await channel._pay_owed_all(conversation, but=owed_to)  # the earlier answers first
    except BaseException:  # cut off (the platform gave up) before its own answer was given
        if owed_to is not None:
            channel.owed_answers.owe(conversation.key, owed_to, text, "cancel", held=held_in,
                                     stored=stored)
        raise
    await _answer_current(channel, conversation, text, command="cancel", owed_to=owed_to,
                          held=held_in, stored=stored)
    return True


async def release_cancelled(channel: ChannelBase, conversation: Conversation) -> None:
    """Release the messages of the turns (running or waiting) ``/cancel`` (or the stop button,
    ``ChannelBase.cancel_turn``) cancelled (see ``Dispatch.take_cancelled_held``): dealt
    with at the user's request, as those ``/clear`` drops. A failed write is logged
    (``event=hold_not_released``): still held, they are told about, needlessly, after a
    restart."""
    held = channel.dispatch.take_cancelled_held(conversation)
    if not held:
        return
    try:
        await channel.runtime.release_inbound(held)
    except TidingsError as exc:
        log.warning("event=hold_not_released conversation=%s error=%s",
                    field(conversation.key), field(repr(exc)))


def _busy(channel: ChannelBase, conversation: Conversation) -> bool:
    """Whether *conversation* has a request running or waiting here (sync)."""
    return any(state.active is not None or state.pending
               for state in channel.dispatch.states_of(conversation))


async def _answer(channel: ChannelBase, conversation: Conversation, session_id: str | None,
                  text: str, *, command: str, owed_to: str | None,
                  stored: bool = False) -> None:
    """``channel.answer``, for a command whose message id was recorded before its answer.
    A direct answer (no session) that does not go out (``deliver()`` raised, or the call was
    cancelled) is owed to the platform's retry of *owed_to*, if given: that retry is a
    ``duplicate`` (the command must not run again), which then gets it. An answer in a
    session is a durable outbox row, owed to nobody.

    *stored*: the direct answer is owed on the record of *owed_to* too (written with it), so
    a crash before it went out does not lose it; cleared once it went out. On a route whose
    client acks (the gateway), a direct answer that went out is kept *given* (and on the
    record) until the client acks it: a connection that drops with it unread must not lose
    it (see :mod:`._owed_answers`)."""
    assert not stored or (session_id is None and owed_to is not None)
    try:
        await channel.answer(conversation, session_id, text, command=command,
                             message_id=owed_to)
    except BaseException:
        if session_id is None and owed_to is not None:
            channel.owed_answers.owe(conversation.key, owed_to, text, command, stored=stored)
        raise
    if session_id is None and owed_to is not None and channel._acks():
        channel.owed_answers.owe(conversation.key, owed_to, text, command, stored=stored,
                                 given=True)
        return
    if stored:
        assert owed_to is not None
        await paid_stored(channel, conversation.key, owed_to)


async def _answer_current(channel: ChannelBase, conversation: Conversation, text: str, *,
                          command: str, owed_to: str | None,
                          held: tuple[str, str] | None = None, stored: bool = False) -> None:
    """:func:`_answer` in the conversation's current session, looked up now (outside the
    conversation's lock, which the lookup may take, and another message may hold). A lookup
    that fails or is cancelled (the platform gave up on the request) leaves the answer owed
    to the retry of *owed_to*, as a direct answer (or, held, in its session): the id is
    recorded, so that retry is a ``duplicate``, and the answer was never given.

    *held*: ``(session_id, inbound_id)``, the answer is held in that session (the current one
    when the command was written): it goes there, releasing the hold; if it does not, the
    next start sends it, and the retry of *owed_to* (or the next message) before that. The
    channel is bound as its route.

    *stored*: the conversation had no session when the command was written, and its answer
    is owed on the record of *owed_to* (see :func:`_answer`): it goes out direct, as it was
    recorded, whatever session a later message has made since (no lookup)."""
    if stored:
        await _answer(channel, conversation, None, text, command=command, owed_to=owed_to,
                      stored=True)
        return
    try:
        session_id = await channel.directory.lookup(conversation)
    except BaseException:
        if owed_to is not None:
            channel.owed_answers.owe(conversation.key, owed_to, text, command, held=held)
        raise
    if held is None:
        await _answer(channel, conversation, session_id, text, command=command,
                      owed_to=owed_to)
        return
    held_in, inbound_id = held
    if held_in != session_id:  # it moved on meanwhile (a later /new): answered where held
        channel.directory.attach(conversation, held_in)
    with _owed_if_cut(channel, conversation, owed_to, text, command, held_in, (inbound_id,)):
        await channel.answer(conversation, held_in, text, command=command,
                             settles=(inbound_id,))


async def _resume(channel: ChannelBase, conversation: Conversation, command: Command,
                  record: Sequence[Op], hold: HoldAnswer | None, owed_to: str | None
                  ) -> tuple[str | None, tuple[str, str] | None, bool]:
    """Resume (under the conversation's lock) and answer; the refusal to send, if refused,
    ``(session_id, inbound_id)`` where it is held, if it is (see :func:`run_command`), and
    whether it is owed on the id's record instead (the conversation has no session: see
    :func:`_answer`).

    The session is bound inside ``hold_binds`` and its ``unrouted`` rows are handed back there
    (a session the directory forgot may have got one, or be writing one, since the
    conversation last spoke): they go out before the answer and anything newer, not after it
    at the conversation's next message. Every channel does this, also one that hands rows back
    elsewhere (the gateway, at each client's hello): a hello hands back only a session not
    bound yet, and the resumed one is bound from here on. A cancel (the platform gave up, a
    stop) cuts the hand-back off between pages, not the effect's write nor the answer's: the
    answer is written after the rows handed back, then the cancel goes on; the rows not
    handed back stay ``unrouted``, and the conversation's next message hands them back (the
    gateway's, or its next hello: see ``LeftBehind``). So for a page's write that failed: the
    answer is written all the same, then the error is raised."""
    target = command.argument or ""
    rt = channel.runtime
    resumed = f"Resumed session {target}."
    name, key = channel.config.name, conversation.key

    def notice(conn: sqlite3.Connection) -> str:  # the answer, read after the rebind
        outcome = resume_outcome(conn, rt.core_id, name, key, target)
        return resumed if outcome == "resumed" else _refusal(outcome)
    held, also = _held(hold, notice, "resume", record)
    # Where a refusal's answer is held, if it is: in the session the conversation is in,
    # read now, under its lock (a refused resume moves nothing), so a read that fails writes
    # nothing; read after the write, its failure left the answer owed on the id's record
    # (no session) and not here, and the retry, a duplicate, unanswered.
    current = await rt.conversation_session(name, key) if held else None
    cut: BaseException | None = None  # what stopped the hand-back, raised after the answer
    try:
        async with rt.hold_binds(channel):
            with _uncut():
                await channel.directory.resume(conversation, target, also=also)
            try:
                await requeue_unrouted(rt, target)
            except (trio.Cancelled, TidingsError) as exc:
                # Cut off between pages (or a page's write failed): the rest stays
                # ``unrouted`` (durable), handed back at the conversation's next message (the
                # gateway: or hello); the answer goes after what went back, then this is
                # raised (the effect committed: the retry, a duplicate, finds nothing owed).
                cut = exc
                channel._handed_back.pop(key, None)
                if not channel.hands_back_unrouted:  # its hellos skip a session bound there
                    channel.handback_left.mark(key, target)
    except SessionNotFoundError as exc:
        refusal = _refusal("closed" if isinstance(exc, SessionClosedError) else "missing")
        if not held:
            return refusal, None, False
        if current is None:  # owed on the id's record
            return refusal, None, owed_to is not None
        return refusal, (current, held[0]), False
    with _uncut(), _owed_if_cut(channel, conversation, owed_to, resumed, "resume", target,
                                held):
        await channel._answer_switch(conversation, target, resumed, command="resume",
                                     settles=held)
    if cut is not None:
        raise cut
    return None, None, False


def _refusal(outcome: ResumeOutcome) -> str:
    """The answer to a ``/resume`` refused with *outcome*: a conversation cannot tell
    another's session from none."""
    return CLEARED_SESSION if outcome == "closed" else NO_SUCH_SESSION
