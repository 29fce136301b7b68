"""Running one channel turn: the agent inside the runtime turn's cancel scope, and its lifecycle.

Order, always: ``started``; the user's message into history (even if the turn is cancelled
while it opens); the agent, whose chunks and tool calls are emitted as they happen; the joined
chunks sent as one persisted ``message`` (none if the agent streamed nothing; several
consecutive ones, see :func:`_finish`, if it is over ``MAX_TEXT_BYTES``); ``completed`` once
that reply's intent is durable. Exactly one terminal event: ``completed``, ``cancelled``
with the first recorded reason, or ``failed``.

A turn cancelled while it opens has a turn row but its agent never runs, so the agent never
sees its prompt. The session remembers such turns (:attr:`SessionState.unseen_turns`) until an
agent runs in it: the first-prompt check does not count them, so the instructions and boundary
note go to the first prompt the agent really gets, and :attr:`ActiveTurn.agent_ran` tells the
dispatcher that no steer note is owed for such a turn.

Why a turn was cancelled is recorded before its scope is cancelled: commands and steer go
through :meth:`ActiveTurn.cancel`; a deadline that fired is recorded as ``timeout`` the moment
anyone looks (first recorded wins, by time); a cancellation from outside the turn (the runtime's
task tree stopping) is ``shutdown``, but for one that comes as the runtime's ``tasks``
supervisor crashed (its parent restarts it) while nothing stops: nobody chose it, so it is no
cancel reason, and the turn ends ``failed``, saying so (:attr:`ActiveTurn.cut`), its messages
left held for the worker's end to tell them not answered (``Dispatch._work``). Once the
outcome is decided, cancels are refused: a turn whose final reply is being written is
``completed``, and one whose agent failed (no cancel recorded first) is ``failed``, even while
its end is still being written. An agent that fails *because* it is being cancelled (it turns
``Cancelled`` into an error, or its own nursery does) is ``cancelled``, in the turns table as
in the lifecycle.
"""

from __future__ import annotations

import functools
import inspect
import logging
import math
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

import trio

from tidings.actors import DeliveryHandle, TurnContext
from tidings.actors._blocks import check_text
from tidings.actors._handle import describe_error
from tidings.actors._turns import only_cancelled, open_turn
from tidings.channels._agents import warn_if_returned
from tidings.channels._boundary import compose_first_prompt
from tidings.channels._bridge import BridgeTurn, split_reply
from tidings.channels._lifecycle import (
    TERMINAL_GRACE,
    CancelReason,
    LifecycleEmitter,
    LifecycleHook,
    TaskLifecycleEvent,
)
from tidings.channels._unanswered import drop_cause_text
from tidings.errors import TidingsError
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.actors import Runtime
    from tidings.channels._base import ChannelBase
    from tidings.channels._dispatch import PendingTurn, SessionState

__all__ = ["ActiveTurn", "dropped_ends_by", "end_dropped", "end_dropped_at_stop", "run_turn",
           "runtime_stopping"]

log = logging.getLogger("tidings.channels")

_STARTED_GRACE = 5.0
_DROPPED_ENDS_GRACE = _STARTED_GRACE + TERMINAL_GRACE
"""What the ends of dropped turns met in a row get, together (a worker's end, for all it found;
the worker's loop, for those it reaches one after another): one turn's worth (``started`` and
``cancelled``), however many there are."""


def runtime_stopping(rt: Runtime) -> bool:
    """Whether *rt* is stopping: closing, or its task runner has begun its stop (sync). A
    turn cancelled from outside then is ``shutdown``, and what a worker ends with is dropped
    for the stop, not for a crash of the ``tasks`` supervisor."""
    return rt.closing or rt.tasks.stopping


class ActiveTurn:
    """The running turn of a session, as commands and steer see it."""

    def __init__(self, emitter: LifecycleEmitter, message_ids: Iterable[str | None] = (),
                 held: Iterable[str] = ()) -> None:
        self.emitter = emitter
        self.held = list(held)
        """The inbound ids its messages are held under, until ``/cancel`` takes them
        (``Dispatch.take_cancelled_held``) to release at once; its end releases them anyway
        (again: ids no longer held are ignored)."""
        self.message_ids = frozenset(message_ids)
        """The client ids of the messages it answers (several when merged): a resend of one
        is answered ``duplicate`` with ``running`` while the turn has not ended."""
        self.ctx: TurnContext | None = None
        self.deadline = math.inf
        self.finishing = False
        """The outcome is decided (the reply is being written, or the agent failed): a
        cancel that comes now is refused, and a deadline that passes now is not a timeout."""
        self.agent_ran = False
        """The agent was called with this turn's prompt. False for a turn cancelled (or
        failed) while it opened: whatever its prompt said, the agent never saw it."""
        self.cut = False
        """A cancel from outside came, no reason recorded, as the runtime's ``tasks``
        supervisor crashed while nothing stops (:meth:`note_trio_cancel`). The turn ends
        ``failed``, its messages still held (its end releases nothing: its row says
        ``cancelled``, a cancel nobody chose), and later cancels are refused: it is already
        ending."""

    @property
    def cancel_reason(self) -> CancelReason | None:
        self.note_deadline()
        return self.emitter.cancel_reason

    def cancel(self, reason: CancelReason) -> bool:
        """Record *reason* and cancel the turn's scope. Never blocks.

        False when an earlier reason stands (a deadline that already fired counts), or the
        turn's outcome is decided (it is writing its final reply, it failed, it has ended).
        """
        if self.finishing or self.cut:
            return False
        self.note_deadline()
        if not self.emitter.record_cancel(reason):
            return False
        if self.ctx is not None:
            self.ctx.cancel(reason)
        return True

    def attach(self, ctx: TurnContext) -> None:
        """The runtime turn exists (its begin is about to be written): apply a reason
        recorded while it was opening, and let later cancels reach it."""
        self.ctx = ctx
        reason = self.emitter.cancel_reason
        if reason is not None:
            ctx.cancel(reason)

    def start_deadline(self, timeout: float | None) -> None:
        if timeout is not None and self.ctx is not None:
            self.deadline = trio.current_time() + timeout
            self.ctx.cancel_scope.deadline = self.deadline

    def note_deadline(self) -> None:
        """If the deadline passed and nothing was recorded yet, record ``timeout``."""
        if (self.deadline <= trio.current_time() and not self.finishing
                and self.emitter.record_cancel("timeout") and self.ctx is not None):
            self.ctx.cancel("timeout")

    def note_trio_cancel(self, runtime: Runtime) -> None:
        """A ``Cancelled`` reached the turn (or a scope around it is cancelled): make sure it
        is accounted for. A deadline is ``timeout``; anything else not recorded came from
        outside: the turn is :attr:`cut` when *runtime*'s ``tasks`` supervisor crashed and
        is stopping its tasks (``TaskRunner.crashed``) while the runtime is not stopping;
        else ``shutdown`` (the runtime's stop; a host's cancel around it; a sibling task's
        ``KeyboardInterrupt``, or the like, that tears through, a stop too). Sync."""
        if self.cancel_reason is None and not self.cut and not self.finishing:
            if runtime.tasks.crashed and not runtime_stopping(runtime):
                self.cut = True
            else:
                self.emitter.record_cancel("shutdown")
        if self.ctx is not None and self.emitter.cancel_reason is not None:
            self.ctx.cancel(self.emitter.cancel_reason)


async def run_turn(channel: ChannelBase, state: SessionState, pending: PendingTurn
                   ) -> ActiveTurn:
    """Run *pending* as the active turn of *state*; return it as it ended: its ``emitter``
    (outcome, reason) and whether its agent ran (``agent_ran``).

    Never raises for an agent's failure (that is ``failed``); re-raises ``trio.Cancelled``
    after emitting ``cancelled`` (reason ``shutdown`` unless an earlier one was recorded), or
    ``failed`` when it came as the ``tasks`` supervisor crashed, nothing stopping and nobody
    having chosen it (:attr:`ActiveTurn.cut`, copied to :attr:`PendingTurn.cut` for the
    worker's end to tell its messages not answered), and any other ``BaseException``
    (``KeyboardInterrupt`` and the like) after emitting ``failed``.
    """
    active = _active_turn(channel, state, pending)
    if pending.cancelled is not None:  # cancelled while it waited: it opens cancelled
        active.cancel(pending.cancelled)
    state.active = active
    try:
        await _drive(channel, state, pending, active)
    finally:
        state.active = None
        pending.cut = active.cut
    rt = channel.runtime
    if active.ctx is None and pending.held and not runtime_stopping(rt):
        # Ended before its runtime turn began (cancelled on purpose, or failed, while it
        # opened): dealt with, as its turn's end would have said. A turn the runtime's stop
        # cut keeps its messages held: recovery tells the user they were not answered.
        try:
            await rt.release_inbound(pending.held)
        except TidingsError as exc:  # still held: told, needlessly, after a restart
            log.warning("event=hold_not_released session=%s error=%s", field(state.session_id),
                        field(repr(exc)))
    return active


async def end_dropped(channel: ChannelBase, state: SessionState, pending: PendingTurn, *,
                      by: float | None = None) -> None:
    """End *pending*, a turn cancelled while it waited and never to run, as a turn cancelled
    before it began ends: ``started``, then ``cancelled`` with its first recorded reason. Two
    callers: the worker, for a turn ``/clear`` dropped (``clear``, or ``cancel_command`` if a
    ``/cancel`` came first), in its place in the session's order (after the turn it waited
    behind); and a worker's end (the runtime's stop), for one it had not reached yet, dropped
    by ``/clear`` or cancelled by ``/cancel``. So whoever waits for its message's end (a
    gateway client of another device, an adapter's lifecycle hook) sees it. Nothing else: no
    runtime turn is opened, its agent never runs and its messages stay out of the history, as
    the user asked (the command released them, or the worker's end does). Bounded: each event
    is shielded for its grace; with *by* (a trio time, from :func:`dropped_ends_by`: the worker
    passes one for the dropped turns it meets in a row), the hook is also given up on at *by*
    (both events are still emitted: a sync hook, or an async one up to its first checkpoint,
    still sees them)."""
    hook = channel.on_task_lifecycle
    if by is not None:
        hook = _hook_until(hook, by, state.session_id)
    active = _active_turn(channel, state, pending, hook=hook)
    active.cancel(pending.cancelled or "clear")
    state.active = active
    try:
        try:
            await _started(active.emitter, state.session_id)
        finally:  # a hook's KeyboardInterrupt or the like propagates, after the end (shielded)
            await active.emitter.cancelled()
    finally:
        state.active = None


async def end_dropped_at_stop(channel: ChannelBase, state: SessionState,
                              dropped: Iterable[PendingTurn], *, by: float | None = None
                              ) -> None:
    """End each of *dropped* (turns a worker's end found cancelled while they waited, in their
    order) as :func:`end_dropped` does, all within one turn's grace together: a hook that hangs
    on each cannot hold the runtime's stop for a grace per turn. Once the grace is spent, the
    rest still get their events, each given up on at once (a sync hook still runs). *by*: the
    grace of the row of dropped turns the worker was ending in its loop as it ended (from
    :func:`dropped_ends_by`), which these go on sharing; None: one from now.

    A hook's ``KeyboardInterrupt`` (or the like) on one of them goes on only once the others
    have ended too: the stop is the last chance any of them has to end (the first raised goes
    on; the worker's own loop needs none: its end ends the rest here)."""
    if by is None:
        by = dropped_ends_by()
    raised: BaseException | None = None
    for pending in dropped:
        try:
            await end_dropped(channel, state, pending, by=by)
        except BaseException as exc:  # noqa: BLE001 -- re-raised below, once all have ended
            if raised is None:
                raised = exc
    if raised is not None:
        raise raised


def dropped_ends_by() -> float:
    """The trio time by which the ends of dropped turns met in a row, from now, are given up
    on (the *by* of :func:`end_dropped`): one turn's grace for them all, so a hook that hangs
    on each holds the session's worker (or the stop) one grace, not one per turn."""
    return trio.current_time() + _DROPPED_ENDS_GRACE


def _hook_until(hook: LifecycleHook, by: float, session_id: str) -> LifecycleHook:
    """*hook*, given up on at trio time *by* when it returns an awaitable (logged): the hook
    is still called, and its sync part (or an async one's, up to its first checkpoint) runs,
    however late."""
    def call(event: TaskLifecycleEvent) -> object:
        result = hook(event)
        if not inspect.isawaitable(result):
            return result

        async def until() -> None:
            with trio.move_on_at(by) as scope:
                await result
            if scope.cancelled_caught:
                log.warning("on_task_lifecycle hook did not finish the %s event of session %s "
                            "within the grace for dropped turns; gave up on it",
                            event.type, field(session_id))
        return until()
    return call


def _active_turn(channel: ChannelBase, state: SessionState, pending: PendingTurn, *,
                 hook: LifecycleHook | None = None) -> ActiveTurn:
    """*pending* as the active turn of *state*, with the emitter of its lifecycle events (to
    *hook*; by default the channel's ``on_task_lifecycle``)."""
    emitter = LifecycleEmitter(channel.on_task_lifecycle if hook is None else hook,
                               channel.config, chat_id=state.conversation.chat_id,
                               session_id=state.session_id, message_id=pending.message_id)
    return ActiveTurn(emitter, (inbound.message_id for inbound in pending.inbounds),
                      pending.held)


async def _started(emitter: LifecycleEmitter, session_id: str) -> None:
    """Emit ``started``: cancelled as it begins, a turn still began (the terminal event never
    comes alone); a hook that hangs on it cannot hold the turn past the grace terminal events
    get."""
    with trio.CancelScope(shield=True), trio.move_on_after(_STARTED_GRACE) as grace:
        await emitter.started()
    if grace.cancelled_caught:  # said, as for a terminal event: the start was held
        log.warning("on_task_lifecycle hook did not finish the started event of session "
                    "%s within %ss; gave up on it", field(session_id), _STARTED_GRACE)


async def _drive(channel: ChannelBase, state: SessionState, pending: PendingTurn,
                 active: ActiveTurn) -> None:
    rt, config, emitter = channel.runtime, channel.config, active.emitter
    try:
        await _started(emitter, state.session_id)
        # First as the agent sees it: no turn of the session but those whose agent never
        # ran (turns are serial: each of those has ended). Known only for the turns this
        # process began; see SessionState.unseen_turns.
        first = not await rt.session_has_turns(state.session_id,
                                               excluding=state.unseen_turns)
        if not first:  # a turn the agent saw exists, and turns are never deleted: the
            state.unseen_turns.clear()  # unseen ones can change no later answer either
        prompt = compose_first_prompt(config, pending.text, first_in_session=first,
                                      steered=pending.steered)
        # Attached before its begin is written: a cancel recorded while it opened is the
        # turn's reason in its row too, even when the runtime's stop cuts that write.
        async with open_turn(rt, state.session_id, message_id=pending.message_id,
                             inbound_ids=pending.held, on_context=active.attach) as ctx:
            state.unseen_turns.add(ctx.turn_id)  # until its agent runs, below
            try:
                # What the user said is history whatever happens to the turn: a cancel or
                # steer that came while it opened must not drop it, and a merged turn's
                # messages go in one commit (never half of them). Bounded: the writer
                # answers every request.
                with trio.CancelScope(shield=True):
                    await rt.record_user_messages(
                        state.session_id, [inbound.text for inbound in pending.inbounds],
                        turn_id=ctx.turn_id)
                await trio.lowlevel.checkpoint()  # cancelled meanwhile: the agent never runs
                bridge = BridgeTurn(ctx, emitter, prompt=prompt, text=pending.text,
                                    message_id=pending.message_id)
                active.start_deadline(config.turn_timeout)
                # The agent gets the prompt now: a first prompt has been given, and every
                # turn of the session counts from here on.
                active.agent_ran = True
                state.unseen_turns.clear()
                warn_if_returned(channel.agent, await channel.agent.run(bridge),
                                 session_id=state.session_id)
                await _finish(ctx, active, bridge, pending.held,
                              functools.partial(channel._answer_queued, state.conversation))
            except BaseException as exc:
                cancelled = only_cancelled(exc)
                if cancelled is None:
                    # Decide now, not after the end is written: a cancel that comes while
                    # it is must not turn this failure into a cancellation.
                    if not _failed_while_cancelled(exc, active):
                        active.finishing = True
                        raise
                    log.info("event=turn_error_while_cancelled session=%s reason=%s "
                             "error=%s", field(state.session_id), field(active.cancel_reason),
                             field(describe_error(exc)))
                    active.note_trio_cancel(rt)
                    # The turn's scope (or one around it) is cancelled, so this raises
                    # Cancelled: the turn ends cancelled (or cut), in the turns table too.
                    await trio.lowlevel.checkpoint()
                    raise
                active.note_trio_cancel(rt)
                # An agent's nursery wraps Cancelled in a group: the turn (and the turns
                # table) must still see a cancellation, not a failure.
                if cancelled is exc:
                    raise
                raise cancelled from None
    except BaseException as exc:
        if only_cancelled(exc) is not None:  # from outside the turn: the runtime is stopping,
            active.note_trio_cancel(rt)  # or the tasks supervisor crashed (cut)
            if active.cut:
                await emitter.failed(_cut_error(channel))
            else:
                await emitter.cancelled("shutdown")  # (the first recorded reason wins)
            raise
        if not isinstance(exc, Exception):  # KeyboardInterrupt or the like: not ours to
            await emitter.failed(exc)  # swallow, but the turn that began still ends, once
            raise
        if active.cancel_reason is not None:  # it failed because it was being cancelled
            # (or something else failed meanwhile: not lost, but not the turn's outcome)
            log.info("event=turn_error_while_cancelled session=%s reason=%s error=%s",
                     field(state.session_id), field(active.cancel_reason),
                     field(describe_error(exc)))  # never raises, as repr() of an odd error may
            await emitter.cancelled()
        else:
            await emitter.failed(exc)
        return
    if emitter.outcome is None:  # the turn's own scope caught the cancel
        await emitter.cancelled(active.cancel_reason or "timeout")


def _cut_error(channel: ChannelBase) -> str:
    """The error of a turn :attr:`ActiveTurn.cut`, in the words of its "not answered"
    notice."""
    return (f"{drop_cause_text('tasks_crash', stopped=channel.stopped_name)} while this "
            f"turn ran")


def _failed_while_cancelled(exc: BaseException, active: ActiveTurn) -> bool:
    """Whether *exc* (no ``Cancelled`` alone) is how the agent reacted to being cancelled: a
    cancel was recorded, or a scope around the turn is cancelled (shutdown), and *exc* holds
    only errors and ``Cancelled`` (never a ``KeyboardInterrupt`` or the like)."""
    if isinstance(exc, BaseExceptionGroup):
        if exc.split((trio.Cancelled, Exception))[1] is not None:
            return False
    elif not isinstance(exc, Exception):
        return False
    return (active.cancel_reason is not None
            or trio.current_effective_deadline() <= trio.current_time())


async def _finish(ctx: TurnContext, active: ActiveTurn, bridge: BridgeTurn,
                  held: list[str], on_reply: Callable[[DeliveryHandle], None]) -> None:
    """Send the reply and emit ``completed``, unless a cancel was recorded first, or a scope
    around the turn is cancelled (shutdown, or its task ending: ``cut``): a careless agent
    that swallowed that ``Cancelled`` and returned did not complete its turn, any more than
    one that swallowed ``/cancel``.
    The reply releases the *held* messages it answers in its own commit (a crash before the
    turn's end is written must not also tell the user they were not answered).

    A reply over ``MAX_TEXT_BYTES`` goes as several messages (:func:`split_reply`), in order,
    each its own history row (joined, they are the reply, as the model sees it); only the last
    releases the held messages. A crash between parts leaves them held, so the next start
    tells the user they were not answered (after the parts already written): a reply cut
    short is never taken for an answer. ``on_reply`` (sync) gets the handle of the reply's
    last message, if one was sent, before ``completed``: a session switch's answer comes after
    it."""
    if (active.cancel_reason is None
            and trio.current_effective_deadline() <= trio.current_time()):
        active.note_trio_cancel(ctx.runtime)  # nothing recorded came from outside
    if active.cancel_reason is not None or active.cut:
        await trio.lowlevel.checkpoint()  # the scope is cancelled: this raises Cancelled
        return
    active.finishing = True  # from here on the turn completes: cancels are refused
    # Text no send takes (a lone surrogate) is refused whole, as a short reply is: no part
    # before it may go out alone.
    parts = split_reply(check_text(bridge.reply, "text"))
    if parts:
        with trio.CancelScope(shield=True):  # bounded: the writer answers every request
            for part in parts[:-1]:
                await ctx.output.send_text(part)
            on_reply(await ctx.output.send_text(parts[-1], settles=held))
    await active.emitter.completed()
