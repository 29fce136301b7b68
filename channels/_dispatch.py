"""Dispatch modes: what a new message does to a session that is busy.

Each session with work has one worker, a task in the runtime's supervision tree that runs the
session's turns one after another, so two turns of one session never run at once.

- ``steer`` (default): cancel the active turn (reason ``steer``), then run the new message
  after it, with the steer note prefixed when the active turn really ended ``cancelled(steer)``
  after its agent ran (an agent that never saw a request is not told it was cancelled; a steer
  note such a turn carried passes on to the next). Messages that arrive while one is already
  waiting join it (nothing the user said is lost).
- ``followup``: per-session FIFO; each message is its own turn.
- ``collect``: messages that arrive during a turn are buffered and sent as one turn after it.

A waiting turn takes at most :data:`~tidings.actors.MAX_IDS_PER_CALL` (10,000) held messages
(``collect`` or ``steer``): its end releases them in one commit, which refuses more. Nor more
messages than the ids of its "not answered" notice's metadata can list within
:data:`~tidings.actors.MAX_JSON_BYTES` (some 300 ids of 200 characters). The next message
starts a new waiting turn behind it, so a larger burst runs as several turns, in order.

A message that was accepted but whose turn never ran (the runtime stopped while it waited, or
its worker's task was cancelled or abandoned, or its channel was closed and a new route took the
session, see :meth:`Dispatch._taken_over`) is not dropped silently: the session gets one
notice per such turn through the outbox (:func:`unanswered_notice`), so the user learns it was
not answered and can send it again, even after a restart. So does the turn running when the
worker's task ends without a stop (the runtime's ``tasks`` supervisor crashed: its parent
restarts it, the server runs on), which ends ``failed`` (:attr:`PendingTurn.cut`): told at
once, first, rather than at the next start. ``/clear`` drops waiting turns too,
but at the user's own request: nothing is said about those, nor about a waiting turn
``/cancel`` had cancelled (:meth:`Dispatch.cancel`). Each turn ``/clear`` drops still ends
where it waited, after the turn ahead of it: ``started``, then ``cancelled`` (reason
``clear``), as a turn cancelled before it began (:meth:`Dispatch.drop_pending`); if its worker
ends first (the runtime's stop), it ends so there, as does a waiting turn ``/cancel``
cancelled (with reason ``cancel_command``).

Each accepted message is also held in the store (``rt.hold_inbound``, by the channel before it
is submitted here) until it is dealt with: the end of the turn that answered it, the notice, or
``/clear`` releases it in the same commit (``/cancel`` releases the messages of a turn, running
or waiting, it cancels at once, see :meth:`Dispatch.take_cancelled_held`). A crash, or a stop
that cuts a running turn, leaves it held, and the next start's recovery sends its notice instead
(:class:`PendingTurn.held`).
"""

from __future__ import annotations

import collections
import functools
import json
import logging
from typing import TYPE_CHECKING, Literal

import attrs
import trio

from tidings.actors._blocks import MAX_JSON_BYTES
from tidings.actors._held import unanswered_metadata
from tidings.actors._status import MAX_ID_CHARS, MAX_IDS_PER_CALL
from tidings.channels._directory import Conversation
from tidings.channels._inbound import Inbound
from tidings.channels._turn import (
    ActiveTurn,
    dropped_ends_by,
    end_dropped,
    end_dropped_at_stop,
    run_turn,
    runtime_stopping,
)
from tidings.channels._unanswered import UNANSWERED_EXCERPT, DropCause, unanswered_notice
from tidings.errors import RuntimeClosedError, StoreClosedError
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.channels._base import ChannelBase
    from tidings.channels._lifecycle import CancelReason

__all__ = [
    "COLLECT_SEPARATOR",
    "UNANSWERED_EXCERPT",
    "Dispatch",
    "PendingTurn",
    "SessionState",
    "Submitted",
    "unanswered_notice",
]

log = logging.getLogger("tidings.channels")

COLLECT_SEPARATOR = "\n\n"
"""Between the texts of messages merged into one turn."""

Submitted = Literal["started", "queued", "merged"]
"""``started``: the session was idle, the turn starts now; ``queued``: it runs after the turn(s)
ahead of it; ``merged``: it joined a waiting turn (``collect``, or ``steer``)."""


@attrs.define
class PendingTurn:
    """A turn waiting to run: one message, or several merged."""

    inbounds: list[Inbound]
    held: list[str] = attrs.field(factory=list)
    """The inbound ids under which its messages are held (``rt.hold_inbound``): released
    with the turn's end, or with the notice that it was not answered."""
    steered: bool = False
    """Its prompt gets the steer note: a turn whose agent was working was steered away for
    it (or such a note went to a turn whose agent then never ran)."""
    id_bytes: int = attrs.field(default=0, init=False)
    """What its messages' ids add to its "not answered" notice's metadata, in bytes of
    JSON (kept as messages join, so a merge costs no more than the message)."""
    cancelled: CancelReason | None = attrs.field(default=None, init=False)
    """Why it was cancelled before it ran (``/cancel`` while the turn ahead of it was already
    ending, see :meth:`Dispatch.cancel`): it runs as a turn cancelled while it opens (its
    messages into history, its agent never called) and takes no more messages."""
    dropped: bool = attrs.field(default=False, init=False)
    """``/clear`` dropped it (:meth:`Dispatch.drop_pending`): its worker only ends it, in its
    turn (:func:`~tidings.channels._turn.end_dropped`), and never runs it."""
    cut: bool = attrs.field(default=False, init=False)
    """It ran and its worker's task ended under it without a stop (the ``tasks`` supervisor
    crashed, see ``ActiveTurn.cut``): it ended ``failed``, its messages still held, and the
    worker's end tells them not answered, first (:meth:`Dispatch._work`)."""

    def __attrs_post_init__(self) -> None:
        self.id_bytes = sum(_id_bytes(inbound.message_id) for inbound in self.inbounds)

    def can_take(self, inbound: Inbound, held: list[str]) -> bool:
        """Whether *inbound* (held under *held*) may join: the turn's end releases its held
        messages in one commit (at most :data:`MAX_IDS_PER_CALL`), and its notice, should it
        never run, lists their ids in metadata of at most :data:`MAX_JSON_BYTES`."""
        return (self.cancelled is None and len(self.held) + len(held) <= MAX_IDS_PER_CALL
                and (_NOTICE_METADATA_BYTES + self.id_bytes + _id_bytes(inbound.message_id)
                     <= MAX_JSON_BYTES))

    def take(self, inbound: Inbound, held: list[str]) -> None:
        """Merge *inbound* (see :meth:`can_take`)."""
        self.inbounds.append(inbound)
        self.held += held
        self.id_bytes += _id_bytes(inbound.message_id)

    @property
    def text(self) -> str:
        return COLLECT_SEPARATOR.join(inbound.text for inbound in self.inbounds)

    @property
    def message_id(self) -> str | None:
        """The newest message's id (the one the turn answers last)."""
        return self.inbounds[-1].message_id


_NOTICE_METADATA_BYTES = len(json.dumps(unanswered_metadata([])))
"""The JSON of a "not answered" notice's metadata that lists no id."""


def _id_bytes(message_id: str | None) -> int:
    """What *message_id* adds to that JSON (a message with none adds nothing): its JSON
    string and a separator (``json.dumps``' ``", "``; one too many for the first id)."""
    return 0 if message_id is None else len(json.dumps(message_id)) + 2


class SessionState:
    """One session's turns in this channel: the active one and those waiting."""

    __slots__ = ("active", "conversation", "pending", "session_id", "unseen_turns", "working")

    def __init__(self, session_id: str, conversation: Conversation,
                 unseen_turns: set[str] | None = None) -> None:
        self.session_id = session_id
        self.conversation = conversation
        self.active: ActiveTurn | None = None
        self.pending: collections.deque[PendingTurn] = collections.deque()
        self.working = False
        self.unseen_turns: set[str] = set() if unseen_turns is None else unseen_turns
        """Turns this process began in the session whose agent has not run (the active one
        while it opens; those cancelled or failed while they opened), until an agent runs in
        the session, or a turn's read finds one it saw (turns are never deleted): then all
        are cleared. Whether a prompt is the session's first leaves them out, since the agent
        never saw their prompts.

        Held in memory only (no column records that an agent ran): such a turn begun by an
        earlier process counts as seen, so a session whose only turns are ones a stopped
        process never got to run (a stop or crash right after a cancel-while-opening) gets no
        instructions. Kept by :class:`Dispatch` while the session is idle, until the
        channel forgets the session (:meth:`Dispatch.forget`)."""


class Dispatch:
    """The per-session turn queues of one channel."""

    def __init__(self, channel: ChannelBase) -> None:
        self._channel = channel
        self._states: dict[str, SessionState] = {}
        self._unseen_turns: dict[str, set[str]] = {}
        """:attr:`SessionState.unseen_turns` of idle sessions (their state is forgotten), for
        the session's next state; only non-empty sets: one small entry per session whose
        agent has not run since a turn was cancelled while it opened."""
        self._telling = 0
        """Notices about dropped turns being written (:meth:`_tell_unanswered`): the
        channel is not idle until they are durable."""
        self._idle = trio.Event()
        self._idle.set()

    def state(self, session_id: str) -> SessionState | None:
        return self._states.get(session_id)

    def forget(self, session_id: str) -> None:
        """The channel is done with *session_id* (its conversation left it and nothing of it
        is in flight): drop the unseen turns kept for it while idle, as a restart would (a
        ``/resume`` of it later counts them as seen). Sync."""
        if session_id not in self._states:
            self._unseen_turns.pop(session_id, None)

    def unseen(self, session_id: str) -> bool:
        """Whether idle *session_id* remembers turns cut while they opened (for its next
        first prompt): the channel keeps such a session's conversation. Sync."""
        return session_id in self._unseen_turns

    def turn_running(self, session_id: str) -> bool:
        state = self._states.get(session_id)
        return state is not None and state.active is not None

    def running_message_ids(self, conversation: Conversation) -> list[str]:
        """The message ids of *conversation*'s running turns, as their lifecycle events carry
        them (one per session: after ``/new`` there may be two); not one whose terminal event
        was emitted already, nor one of messages without an id."""
        ids: list[str] = []
        for state in self.states_of(conversation):
            active = state.active
            if active is not None and active.emitter.outcome is None \
                    and active.emitter.message_id is not None:
                ids.append(active.emitter.message_id)
        return ids

    def unfinished(self, conversation: Conversation, message_id: str) -> bool:
        """Whether a turn of *conversation* that answers the message *message_id* has not
        ended: it runs (its terminal event not emitted yet), or waits to run (queued, or
        merged into a waiting turn)."""
        for state in self.states_of(conversation):
            active = state.active
            if active is not None and active.emitter.outcome is None \
                    and message_id in active.message_ids:
                return True
            if any(inbound.message_id == message_id
                   for pending in state.pending for inbound in pending.inbounds):
                return True
        return False

    def states_of(self, conversation: Conversation) -> list[SessionState]:
        """Every session of *conversation* with work here (after ``/new`` there may be two)."""
        return [state for state in self._states.values()
                if state.conversation.key == conversation.key]

    def submit(self, session_id: str, conversation: Conversation, inbound: Inbound,
               held: str | None = None) -> Submitted:
        """Queue *inbound* (held under the inbound id *held*, if given) for the session by the
        channel's dispatch mode. Never blocks. A waiting turn that holds
        :data:`MAX_IDS_PER_CALL` messages already takes no more (its end could not release
        them), nor one whose id its notice could not list (:meth:`PendingTurn.can_take`):
        *inbound* waits in a new turn after it.

        Raises:
          RuntimeClosedError: the runtime is stopping (nothing was queued).
        """
        mode = self._channel.config.dispatch_mode
        state = self._states.get(session_id)
        if state is None:
            state = self._states[session_id] = SessionState(
                session_id, conversation, self._unseen_turns.pop(session_id, None))
        busy = state.active is not None or bool(state.pending)
        held_ids = [] if held is None else [held]
        if (mode in ("steer", "collect") and state.pending
                and state.pending[-1].can_take(inbound, held_ids)):
            state.pending[-1].take(inbound, held_ids)
            outcome: Submitted = "merged"
        else:
            state.pending.append(PendingTurn([inbound], held_ids))
            outcome = "queued" if busy else "started"
        if not state.working:
            self._start_worker(state, outcome)
        if mode == "steer" and state.active is not None:
            state.active.cancel("steer")
        return outcome

    def cancel(self, conversation: Conversation, reason: CancelReason) -> int:
        """Cancel, in each of *conversation*'s sessions, the oldest request not yet over:
        the active turn, or, when it is already ending (steered away, timed out, writing its
        reply, failed) or has not begun, the first waiting turn not cancelled yet, which then
        runs as one cancelled while it opens. How many were cancelled.

        So a message that steered a turn that takes a while to stop, then ``/cancel``, cancels
        that message, as the user meant: "Nothing to cancel." and the message answered after
        all is what it did before."""
        cancelled = 0
        for state in self.states_of(conversation):
            if state.active is not None and state.active.cancel(reason):
                cancelled += 1
                continue
            waiting = next((turn for turn in state.pending if turn.cancelled is None), None)
            if waiting is not None:
                waiting.cancelled = reason
                cancelled += 1
        return cancelled

    def take_cancelled_held(self, conversation: Conversation) -> list[str]:
        """Take the held messages of *conversation*'s turns ``/cancel`` cancelled
        (:meth:`cancel`), for the caller to release now, as ``/clear`` releases what it
        drops: left held until the turn's end (a waiting one's, once the worker reaches it),
        a crash meanwhile made the next start tell the user "not answered" about a message
        they had cancelled. A waiting turn still runs in its place as one cancelled while it
        opens, releasing nothing; a running one still ends cancelled (a cancel it took came
        before it began writing its reply, see ``ActiveTurn.finishing``: no answer is lost;
        a later one was refused, and its reply releases them). Sync."""
        held: list[str] = []
        for state in self.states_of(conversation):
            active = state.active
            if active is not None and active.cancel_reason == "cancel_command":
                held += active.held
                active.held = []
            for pending in state.pending:
                if pending.cancelled is not None and not pending.dropped:
                    held += pending.held
                    pending.held = []
        return held

    def drop_pending(self, conversation: Conversation) -> list[str]:
        """Drop the turns still waiting in *conversation*'s sessions; return the inbound ids
        their messages are held under, for the caller to release.

        ``/clear``: the user asked for it, so no notice is sent about them (unlike turns a
        worker leaves behind when it ends, see :meth:`_tell_unanswered`). Each still ends
        observably: it stays in its place in the queue, cancelled (reason ``clear`` unless a
        ``/cancel`` came first) and taking no more messages, and its worker, once the turns
        ahead of it have ended, emits its ``started`` and ``cancelled`` events and nothing
        else (:func:`~tidings.channels._turn.end_dropped`); a worker that ends before it
        reaches it (the runtime's stop) ends it so as it goes (:meth:`_tell_unanswered`). A
        client that waits for its message's end so sees it, and a session's turns still never
        overlap. Sync."""
        held: list[str] = []
        for state in self.states_of(conversation):
            for pending in state.pending:
                if pending.dropped:
                    continue
                held += pending.held
                pending.held = []
                pending.dropped = True
                if pending.cancelled is None:
                    pending.cancelled = "clear"
        return held

    async def wait_idle(self) -> None:
        """Block until no session of this channel has an active or waiting turn, and every
        notice about a turn that was dropped unanswered is durable."""
        while not self._idle.is_set():
            await self._idle.wait()
        await trio.lowlevel.checkpoint()

    def _start_worker(self, state: SessionState, outcome: Submitted) -> None:
        state.working = True
        if self._idle.is_set():
            self._idle = trio.Event()
        name = _task_name(self._channel.config.name, state.session_id)
        try:
            self._channel.runtime.start_task(name, self._work, state,
                                             on_abandon=lambda: self._abandoned(state))
        except BaseException:
            state.working = False
            if outcome != "merged":
                state.pending.pop()
            self._forget_if_idle(state)
            raise

    async def _work(self, state: SessionState) -> None:
        tasks = self._channel.runtime.tasks
        by: float | None = None  # one grace for the dropped turns met in a row, not one each
        running: PendingTurn | None = None  # the turn being run, should the task end under it
        try:
            while state.pending and not tasks.stopping and not self._taken_over(state):
                pending = state.pending.popleft()
                if pending.dropped:
                    if by is None:
                        by = dropped_ends_by()
                    await end_dropped(self._channel, state, pending, by=by)
                    continue
                by = None
                running = pending
                turn = await run_turn(self._channel, state, pending)
                running = None
                if state.pending and _owes_steer_note(pending, turn):
                    state.pending[0].steered = True
        finally:
            # A turn its task's end cut without a stop (a crash of the tasks supervisor) is
            # told with the turns waiting behind it, first, and so is why they never ran.
            cut = running if running is not None and running.cut else None
            dropped = self._worker_ended(state, cut)
            if dropped:
                # Often reached through a cancellation (the runtime's stop after the grace):
                # shielded so the notices are written while the store's writer still runs,
                # and bounded, as the writer answers every request.
                cause: DropCause = "tasks_crash" if cut else self._drop_cause(state)
                with trio.CancelScope(shield=True):
                    await self._tell_unanswered(state, dropped, cause, by=by)

    def _drop_cause(self, state: SessionState) -> DropCause:
        """Why *state*'s worker ended with turns still waiting, for their notices: the
        runtime's stop; else the channel's close, another route having taken the session;
        else its task ended without either (the ``tasks`` supervisor crashed: its parent
        restarts it). Sync: read as the worker ends, before anything is awaited."""
        if runtime_stopping(self._channel.runtime):
            return "stop"
        return "taken_over" if self._taken_over(state) else "tasks_crash"

    def _taken_over(self, state: SessionState) -> bool:
        """Whether the channel was closed and another route has bound the session since (the
        adapter reloaded: a new channel of the same name took the conversation's next
        message). The turns still waiting here are then dropped with a notice, as at a stop:
        run after this turn, they would be answered after that newer message, whose turn
        got in line for the session first. Sync: an attribute read and a dict lookup."""
        if not self._channel.directory.closed:
            return False
        binding = self._channel.runtime.router.binding(state.session_id)
        return binding is not None and binding.route is not self._channel

    def _worker_ended(self, state: SessionState, cut: PendingTurn | None = None
                      ) -> list[PendingTurn]:
        """The session's worker ended (or never ran: its task failed before it began).

        Returns the turns still waiting, now taken from the session: they will never run, and
        whoever ends the worker must tell the user about them (:meth:`_tell_unanswered`,
        which also lets :meth:`wait_idle` return); first *cut*, if given, the turn the end of
        the worker's task cut (:attr:`PendingTurn.cut`), whose messages are still held. The
        session is idle at once, so a message that comes meanwhile starts a new worker.
        """
        state.working = False
        dropped = ([] if cut is None else [cut]) + list(state.pending)
        state.pending.clear()
        if dropped:
            self._telling += 1  # until _told(): the channel is not idle before they are
            if self._idle.is_set():
                self._idle = trio.Event()
        self._forget_if_idle(state)
        return dropped

    def _abandoned(self, state: SessionState) -> None:
        """The worker's task ended before it ran (sync, from the supervisor): its waiting
        turns are told about (and those the user cancelled ended) by a task of their own,
        since nothing can be awaited here; the runtime takes it also at its stop (a worker
        abandoned as the stop begins), and the stop waits for it, and while its ``tasks``
        supervisor goes away (a worker abandoned as that one crashes: the restarted one runs
        it, or the stop, should none come). Only if that task cannot be started, or is itself
        abandoned, is the drop just logged."""
        dropped = self._worker_ended(state)
        if not dropped:
            return
        cause = self._drop_cause(state)
        name = _task_name(self._channel.config.name, state.session_id, "unanswered")
        not_told = functools.partial(self._not_told, state.session_id, len(dropped))

        def abandoned(why: str) -> None:
            not_told(0, 0, why)
            self._told()

        try:
            self._channel.runtime.start_task(
                name, self._tell_unanswered_shielded, state, dropped, cause,
                on_abandon=lambda: abandoned("the notice task was abandoned"))
        except Exception as exc:  # noqa: BLE001 -- a sync callback: logged, never raised
            abandoned(f"no task could write the notices: {exc!r}")

    async def _tell_unanswered_shielded(self, state: SessionState,
                                        dropped: list[PendingTurn], cause: DropCause) -> None:
        """:meth:`_tell_unanswered` as a task of its own, which the runtime's stop must not
        cut short: the notices are the only trace of those messages."""
        with trio.CancelScope(shield=True):  # bounded: the writer answers every request
            await self._tell_unanswered(state, dropped, cause)

    async def _tell_unanswered(self, state: SessionState, dropped: list[PendingTurn],
                               cause: DropCause, *, by: float | None = None) -> None:
        """Tell the user, in *state*'s session, about each turn in *dropped* (accepted, never
        run; or run and cut by a crash, :attr:`PendingTurn.cut`): one notice through the
        runtime's outbox per turn, saying why (*cause*, see
        :func:`~tidings.channels._unanswered.unanswered_notice`), so it reaches the platform
        whenever the session has a route again (after a restart too). A turn the user had
        cancelled (:attr:`PendingTurn.cancelled`: ``/cancel``, or dropped by ``/clear``) is
        only released, as ``/clear`` releases the turns it drops, and then ends as its worker
        would have ended it (:func:`~tidings.channels._turn.end_dropped`: ``started``, then
        ``cancelled`` with the command's reason), whatever the writes did: whoever waits for
        its message's end learns it now, since the next start has nothing to say about it.
        Never raises for a failed write:
        the runtime may already be closed; then the drop is only logged.

        Those ends share one grace, given up on at trio time *by* when the worker was ending
        dropped turns in its loop as it ended (the rest of the same row, see
        :func:`~tidings.channels._turn.dropped_ends_by`): else one of their own, from now.

        The dropped text does not become a ``user`` history row: history is what the model
        saw and answered, and a question left there unanswered would be taken up later, out
        of context, or answered twice once the user sends it again (as asked).
        """
        rt, session_id = self._channel.runtime, state.session_id
        told = notices = 0  # turns dealt with; of them, those told by a notice
        try:
            for pending in dropped:
                if pending.cancelled is not None:  # the user cancelled it: as /clear, no word
                    if pending.held:  # (none left when /clear or /cancel released them)
                        await rt.release_inbound(pending.held)
                    told += 1
                    continue
                ids = [inbound.message_id for inbound in pending.inbounds
                       if inbound.message_id is not None]
                await rt.notify(session_id, unanswered_notice(
                    pending.text, stopped=self._channel.stopped_name, cause=cause),
                                metadata=unanswered_metadata(ids),
                                settles=pending.held)
                told += 1
                notices += 1
        except (RuntimeClosedError, StoreClosedError) as exc:
            self._not_told(session_id, len(dropped), told, notices,
                           f"the runtime is closed: {exc}")
        except Exception as exc:  # noqa: BLE001 -- cleanup: logged, never raised over a cancel
            self._not_told(session_id, len(dropped), told, notices,
                           f"the notice failed: {exc!r}")
        else:
            log.warning("event=turns_dropped channel=%s session=%s count=%d "
                        "reason=worker_ended notices=%d cause=%s",
                        field(self._channel.config.name), field(session_id), len(dropped),
                        notices, cause)
        finally:
            try:  # one grace for them all, not one per turn: hooks that hang on each must
                # not hold the stop for N graces (the callers shield this)
                await end_dropped_at_stop(
                    self._channel, state,
                    [pending for pending in dropped if pending.cancelled is not None], by=by)
            finally:
                self._told()

    def _told(self) -> None:
        """One :meth:`_worker_ended` with dropped turns has been dealt with (told or
        logged)."""
        self._telling -= 1
        self._set_idle_if_idle()

    def _not_told(self, session_id: str, count: int, told: int, notices: int,
                  why: str) -> None:
        """Log the *count* - *told* turns of a worker's end left unanswered and untold
        (*notices*: how many of the others got a notice)."""
        log.error("event=turns_dropped channel=%s session=%s count=%d reason=worker_ended "
                  "notices=%d note=%s", field(self._channel.config.name), field(session_id),
                  count, notices,
                  field(f"{count - told} accepted message(s) were not answered and the "
                          f"sender was not told now (a held one is told at the next "
                          f"start): {why}"))

    def _forget_if_idle(self, state: SessionState) -> None:
        if (state.working or state.pending or state.active is not None
                or self._states.get(state.session_id) is not state):
            return
        del self._states[state.session_id]
        if state.unseen_turns:
            self._unseen_turns[state.session_id] = state.unseen_turns
        self._set_idle_if_idle()

    def _set_idle_if_idle(self) -> None:
        if not self._states and not self._telling:
            self._idle.set()


def _task_name(*parts: str) -> str:
    """The name of a task this channel starts (``<channel>:<session id>[:...]``), cut to
    :data:`MAX_ID_CHARS` characters: ``start_task`` refuses a longer name, and both parts may
    be long legal ids (a channel named at the cap, a session id an earlier version stored).
    The name is only for the logs (the supervisor makes each child's name unique)."""
    name = ":".join(parts)
    return name if len(name) <= MAX_ID_CHARS else name[:MAX_ID_CHARS - 1] + "\u2026"


def _owes_steer_note(pending: PendingTurn, turn: ActiveTurn) -> bool:
    """Whether the turn after *turn* (which ran *pending*) gets the steer note: *turn* was
    steered away while its agent worked on it, or its agent never ran and *pending* carried a
    note (the request that note is about was never said to be cancelled)."""
    if not turn.agent_ran:
        return pending.steered
    return turn.emitter.outcome == "cancelled" and turn.emitter.cancel_reason == "steer"
