"""Turns: a unit of agent work in one session, with its own cancel scope and output SDK.

``open_turn`` records the turn (``running``), runs the body inside the turn's cancel scope, and
records exactly one terminal state: ``completed``, ``cancelled`` (with the reason recorded
before the scope was cancelled, and passed to trio as ``reason=``) or ``failed``. Leaving the
turn never waits for its deliveries: they belong to the runtime.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal, TypeVar, get_args

import trio

from tidings.actors._handle import describe_error
from tidings.actors._pipeline import new_id
from tidings.actors._policy import MODES, POLICIES, SLOTS, HistoryPolicy, check_mode_allows
from tidings.actors._questions import checked_approval_request, checked_prompt
from tidings.actors._records import ApprovalDecision, ApprovalRequest, Prompt, PromptAnswer
from tidings.actors._sdk import OutputSDK
from tidings.actors._status import (
    MAX_IDS_PER_CALL,
    check_id,
    check_id_list,
    check_session_id,
    seconds_bound,
)
from tidings.actors._tasks import SHUTDOWN_REASON
from tidings.errors import ConflictError, RuntimeClosedError, StoreClosedError, ValidationError
from tidings.store import Op, Store, begin_turn, end_turn, release_inbound
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.actors._runtime import Runtime

__all__ = ["CANCEL_REASONS", "ROUTE_FAILED", "TurnContext", "only_cancelled", "open_turn"]

log = logging.getLogger("tidings.turns")

CancelReason = Literal["cancel_command", "clear", "steer", "timeout", "shutdown"]
"""Why a turn was cancelled (``open_turn``'s cancel ``reason``, a channel's lifecycle event)."""

CANCEL_REASONS: tuple[CancelReason, ...] = get_args(CancelReason)
"""Every :data:`CancelReason`, one tuple for the runtime and the channels."""

ROUTE_FAILED = "route_failed"
"""The ``reason`` of a question that failed closed because its route raised while asking."""

_Q = TypeVar("_Q", Prompt, ApprovalRequest)
_A = TypeVar("_A", PromptAnswer, ApprovalDecision)


class TurnContext:
    """What a turn's body gets: ``output`` / ``input`` SDKs, ids, cancel, prompts."""

    def __init__(self, runtime: Runtime, *, turn_id: str, session_id: str, channel: str | None,
                 slot: str, mode: str, output_policy: HistoryPolicy,
                 input_policy: HistoryPolicy) -> None:
        self.runtime = runtime
        self.turn_id = turn_id
        self.session_id = session_id
        self.channel = channel
        self.slot = slot
        self.mode = mode
        self.output = OutputSDK(self, default_policy=output_policy, name="output")
        self.input = OutputSDK(self, default_policy=input_policy, name="input")
        self.cancel_scope = trio.CancelScope()
        self.reason: str | None = None
        self.closed = False
        # The waits of questions being asked (see _ask): cancelled when the turn ends.
        self._asking: set[trio.CancelScope] = set()

    def cancel(self, reason: str) -> bool:
        """Cancel the turn; the first recorded reason wins. Returns False if it already had one
        (or has ended). Never blocks."""
        if reason not in CANCEL_REASONS:
            raise ValidationError("reason", f"must be one of {', '.join(CANCEL_REASONS)}, "
                                            f"got {reason!r}")
        if self.reason is not None or self.closed:
            return False
        self.reason = reason
        self.cancel_scope.cancel(reason=reason)
        return True

    def check_open(self) -> None:
        """Raise :class:`RuntimeClosedError` if the turn has ended or the runtime is stopping:
        what every send and question of the turn checks first. Never blocks."""
        if self.closed:
            raise RuntimeClosedError(f"turn {self.turn_id} has ended; it cannot send")
        if self.runtime.closing:
            raise RuntimeClosedError("the runtime is stopping; no new deliveries are accepted")

    async def prompt_user(self, text: str, *, expires_in: float | None = None) -> PromptAnswer:
        """Ask the person on this session's route; fails closed without one, and when the
        route fails to ask (:data:`ROUTE_FAILED`, see :meth:`_route_failed`).

        Raises:
          ValidationError: *text* is not a string, is empty, not valid Unicode or over
            :data:`MAX_TEXT_BYTES` (as a message's text), or *expires_in* is not None or a
            number of seconds >= 0 (the field is named); nothing is asked.
          RuntimeClosedError: the turn has ended (or ended while the question waited,
            asked from a task outside the turn: it is withdrawn), or its runtime has
            stopped; or it is cancelled, or past its timeout, and asks from a shielded
            section (nothing is asked).
          trio.Cancelled: the turn is cancelled, or its timeout has passed (nothing is asked).
        """
        expires_at = self._expiry(expires_in)
        prompt = checked_prompt(Prompt(self.session_id, text, new_id("prompt"), self.turn_id,
                                       expires_at))  # the router's own check, before the wait
        await self._may_ask()
        return await self._ask(self.runtime.router.prompt_user, prompt, prompt.prompt_id,
                               PromptAnswer(None, ROUTE_FAILED))

    async def request_approval(self, action: str, *, details: Mapping[str, Any] | None = None,
                               expires_in: float | None = None) -> ApprovalDecision:
        """Ask for approval on this session's route; fails closed (denied) without one, and
        when the route fails to ask (:data:`ROUTE_FAILED`, see :meth:`_route_failed`).

        Raises:
          ValidationError: *action* is not a non-empty string (valid Unicode, at most
            :data:`MAX_TEXT_BYTES`), *details* not a JSON-ready mapping of at most
            :data:`MAX_JSON_BYTES`, or *expires_in* not None or a number of seconds >= 0 (the
            field is named); nothing is asked.
          RuntimeClosedError: the turn has ended (or ended while the question waited,
            asked from a task outside the turn: it is withdrawn), or its runtime has
            stopped; or it is cancelled, or past its timeout, and asks from a shielded
            section (nothing is asked).
          trio.Cancelled: the turn is cancelled, or its timeout has passed (nothing is asked).
        """
        expires_at = self._expiry(expires_in)
        request = checked_approval_request(ApprovalRequest(  # its converter names details
            self.session_id, action, new_id("approval"), details, self.turn_id, expires_at))
        await self._may_ask()
        return await self._ask(self.runtime.router.request_approval, request,
                               request.request_id, ApprovalDecision(False, ROUTE_FAILED))

    async def _may_ask(self) -> None:
        """Refuse a question from a turn that has ended or is cancelled: nobody could act on
        the answer, so the question would be a lie. A full checkpoint first, as trio turns a
        deadline (the turn's timeout) that passed into a cancel only at a schedule point (the
        asker gets its ``Cancelled``); then the end check (an asker outside the turn's task:
        the turn may end meanwhile), the cancel check (an asker in a shielded section, which
        the checkpoint cannot stop: :class:`RuntimeClosedError`), and the runtime's, as for a
        send (:meth:`check_open`: a host's turn may outlive its runtime), also once its stop
        has cancelled the turns still running after the grace."""
        await trio.lowlevel.checkpoint()
        if self.closed:
            raise RuntimeClosedError(f"turn {self.turn_id} has ended; it cannot ask")
        # Asked from a shielded section (an agent's cleanup) no Cancelled stops it: the user,
        # told the request was cancelled, would be asked about it all the same.
        if self.reason is not None or self.cancel_scope.cancel_called \
                or self.cancel_scope.deadline <= trio.current_time():
            raise RuntimeClosedError(f"turn {self.turn_id} was cancelled; it cannot ask")
        # The stop's cancel of the turns still running after the grace (``shutdown``) is
        # no Cancelled in a shielded section either, nor recorded before the turn ends.
        if self.runtime.closing or self.runtime.tasks.cancelled:
            raise RuntimeClosedError("the runtime is stopping; turns can no longer ask")

    async def _ask(self, ask: Callable[[_Q], Awaitable[_A]], question: _Q, question_id: str,
                   failed: _A) -> _A:
        """``await ask(question)`` (the router's ``prompt_user`` or ``request_approval``), or
        *failed* when the route raised (see :meth:`_route_failed`).

        Withdrawn when the turn ends (:meth:`withdraw_questions`) while it waits: an asker
        outside the turn's task (the turn's own are cancelled with it) then gets
        :class:`RuntimeClosedError`, as it would asking after the end, instead of a question
        left open for a turn that is over. Likewise when the runtime stops: the router
        withdraws every question it is asking (``SessionInteractionRouter.withdraw_questions``,
        right after the runtime starts closing), a host's turn outlives it, but can no longer
        send."""
        scope = trio.CancelScope()
        self._asking.add(scope)  # (no checkpoint since _may_ask saw the turn open)
        try:
            with scope:
                try:
                    return await ask(question)
                except Exception as exc:  # noqa: BLE001 - the route's failure: fails closed
                    # Once the runtime is closing, what the router raises is its withdrawal
                    # (a route's own error then is turned into it): said below, as the turn's.
                    if not (self.runtime.closing and isinstance(exc, RuntimeClosedError)):
                        await self._route_failed(ask.__name__, question_id, exc)
                        return failed
        finally:
            self._asking.discard(scope)
        if not self.closed:  # the turn is open: its runtime stopped (withdraw_questions)
            raise RuntimeClosedError(f"the runtime stopped while {question_id} waited for an "
                                     "answer; the question was withdrawn")
        raise RuntimeClosedError(f"turn {self.turn_id} ended while {question_id} waited for "
                                 "an answer; the question was withdrawn")

    def withdraw_questions(self) -> None:
        """Cancel the waits of the questions still being asked (the turn has ended). Never
        blocks."""
        for scope in self._asking:
            scope.cancel(reason="the turn that asked has ended")

    async def _route_failed(self, method: str, question_id: str, error: Exception) -> None:
        """The route's *method* raised (its platform is down, a bug of the adapter): the
        question fails closed, as without a route, instead of failing the turn with an error
        of the platform's that no agent could expect. Logged with the error.

        Unless the asker is cancelled (the turn, or a scope of the agent's): then the error is
        most likely how the route's platform library ended the request the cancel aborted,
        and the asker gets its ``Cancelled`` (the route's error as its context), as a cancel
        while the route asks properly gives it, not an answer ``route_failed``."""
        await trio.lowlevel.checkpoint_if_cancelled()
        log.warning("event=question_route_failed session=%s turn=%s question=%s method=%s "
                    "error=%s", field(self.session_id), self.turn_id, question_id, method,
                    field(describe_error(error, 300)))

    def _expiry(self, expires_in: float | None) -> float | None:
        if expires_in is None:
            return None
        if (isinstance(expires_in, bool) or not isinstance(expires_in, int | float)
                or not expires_in >= 0):  # NaN too
            raise ValidationError("expires_in", f"must be None or seconds >= 0, got "
                                                f"{expires_in!r:.80}")
        # (an int past a float's range: never, as math.inf is)
        return self.runtime.store.clock() + seconds_bound(expires_in)


def turn_policies(slot: str, mode: str, history_policy: str | None
                  ) -> tuple[HistoryPolicy, HistoryPolicy]:
    """Default policies of ``ctx.output`` and ``ctx.input`` for a turn."""
    if slot not in SLOTS:
        raise ValidationError("slot", f"must be one of {', '.join(SLOTS)}, got {slot!r}")
    if mode not in MODES:
        raise ValidationError("mode", f"must be one of {', '.join(MODES)}, got {mode!r}")
    if history_policy is not None:
        if history_policy not in POLICIES:
            raise ValidationError("history_policy", f"must be one of {', '.join(POLICIES)}, "
                                                    f"got {history_policy!r}")
        check_mode_allows(history_policy, mode)  # type: ignore[arg-type]
        return history_policy, history_policy  # type: ignore[return-value]
    output: HistoryPolicy = "persist" if slot == "output" and mode == "serial" else "transient"
    return output, "transient"


@asynccontextmanager
async def open_turn(runtime: Runtime, session_id: str, *, slot: str = "output",
                    mode: str = "serial", history_policy: str | None = None,
                    message_id: str | None = None, turn_id: str | None = None,
                    inbound_ids: Iterable[str] = (),
                    on_context: Callable[[TurnContext], object] | None = None
                    ) -> AsyncIterator[TurnContext]:
    """See :meth:`Runtime.open_turn`. A serial turn first waits for the session's running
    serial turn, if any, to end (see :func:`_serial_slot`), in line from the call on: it
    takes its place before its first await (the session's read comes after).

    *on_context* (the channel turn's) is called (sync) with the turn's context as soon as it
    exists, before its begin is written: a cancel that was waiting for the turn, or that
    comes while the begin is written, is then the turn's reason (``ctx.cancel``), also when
    the runtime's stop cuts that write (the row would otherwise say ``shutdown``)."""
    output_policy, input_policy = turn_policies(slot, mode, history_policy)
    if turn_id is not None:
        check_id("turn_id", turn_id)
    if message_id is not None:  # stored as the turn's message
        check_id("message_id", message_id)
    answers = check_id_list("inbound_ids", inbound_ids, max_ids=MAX_IDS_PER_CALL)
    check_session_id("session_id", session_id)  # before it names a serial slot
    runtime.check_open()
    # In line for the slot before the first await: serial turns begin in the order they were
    # opened, not in the order their session reads (worker threads) happen to finish.
    async with _serial_slot(runtime, session_id, mode):
        runtime.check_open()  # before the read: a closed runtime's store can no longer answer
        session = await runtime.session(session_id)
        runtime.check_open()  # it may have begun stopping while this turn waited
        ctx = TurnContext(runtime, turn_id=turn_id or new_id("turn"), session_id=session_id,
                          channel=session.channel, slot=slot, mode=mode,
                          output_policy=output_policy, input_policy=input_policy)
        if on_context is not None:
            on_context(ctx)
        store = runtime.store
        status, error = "completed", None
        dealt_with = True  # whether the turn dealt with its messages (_UNANSWERED_REASONS)
        ours = True  # whether the turns row may be this call's (then its end closes it)
        try:
            # Inside the try: a caller cancelled while the begin is in flight leaves it to commit,
            # and the end (queued behind it, shielded) still closes the row.
            try:
                await store.commit(begin_turn(ctx.turn_id, session_id=session_id, slot=slot,
                                              mode=mode, now=store.clock(),
                                              message_id=message_id))
            except ConflictError:  # the id is another turn's: its row is not ours to end
                ours = False
                raise ValidationError("turn_id", f"a turn with id {ctx.turn_id!r} already "
                                                 f"exists") from None
            with ctx.cancel_scope:
                yield ctx
            # A body that caught the Cancelled of a cancel it was given (ctx.cancel said
            # yes, trio's own cancel() of its scope, its deadline) and returned did not
            # complete its turn either: ``cancel_called``, not ``cancelled_caught``, which
            # a swallowed Cancelled leaves False (its held messages were released).
            cut = ctx.cancel_scope.cancelled_caught or ctx.cancel_scope.cancel_called
            if cut or ctx.reason is not None:
                status = "cancelled"
            if ctx.reason is None and cut:
                # Its own scope's deadline (DESIGN: timeout), else trio's own cancel() of
                # it, which gave no reason: as a cancel from outside (below).
                ctx.reason = ("timeout" if trio.current_time() >= ctx.cancel_scope.deadline
                              else "cancelled")
        except BaseException as exc:
            # A nursery in the body turns a cancel from outside into a group of them: still
            # a cancel, not a failure.
            cancelled = only_cancelled(exc)
            if cancelled is None:
                status, error = "failed", describe_error(exc)
                # Not a KeyboardInterrupt (the host stops), nor a failure while the runtime
                # stops (a host's turn: its question withdrawn, its sends refused): the stop
                # cut it, and nothing it could send would go out.
                dealt_with = isinstance(exc, Exception) and not runtime.closing
                raise
            status = "cancelled"
            if ctx.reason is None:
                # A runtime task is cancelled at exit (reason ``shutdown``) before the runtime is
                # marked closing: trio's reason says so. A deadline around the turn (the
                # host's ``move_on_after``) is its timeout.
                stopping = runtime.closing or cancelled.reason == SHUTDOWN_REASON
                ctx.reason = ("shutdown" if stopping else
                              "timeout" if cancelled.source == "deadline" else "cancelled")
            raise
        finally:
            ctx.closed = True
            ctx.withdraw_questions()  # an asker outside the turn's task: nobody would act
            if ours:
                ops = end_turn(ctx.turn_id, status=status, now=store.clock(),
                               reason=ctx.reason, error=error)
                if answers and dealt_with and ctx.reason not in _UNANSWERED_REASONS:
                    ops += release_inbound(answers, session_id=session_id)
                with trio.CancelScope(shield=True):  # the writer answers every request, even
                    await _record_end(store, ctx.turn_id, ops)  # stopping


def only_cancelled(exc: BaseException) -> trio.Cancelled | None:
    """*exc* itself if it is ``trio.Cancelled``; the first one if *exc* is a group (nested or
    not) of nothing but ``Cancelled``, as a nursery that was cancelled from outside raises;
    else None."""
    if isinstance(exc, trio.Cancelled):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        leaves = [only_cancelled(inner) for inner in exc.exceptions]
        if leaves and all(leaf is not None for leaf in leaves):
            return leaves[0]
    return None


@asynccontextmanager
async def _serial_slot(runtime: Runtime, session_id: str, mode: str) -> AsyncIterator[None]:
    """Hold the session's serial slot (serial turns only) from before the turn begins until its
    end is recorded: serial turns of one session run one at a time, in the order they came
    (trio's lock is fair), so their history never interleaves. Parallel and background turns
    do not take it. A serial turn opened inside one of its session's serial turns would wait
    for itself: in the same task it is refused; a sub-task should open a parallel turn."""
    if mode != "serial":
        yield
        return
    slots = runtime.serial_turns
    lock = slots.setdefault(session_id, trio.Lock())
    if lock.statistics().owner is trio.lowlevel.current_task():
        raise ValidationError("mode", f"a serial turn of session {session_id!r} is already "
                                      f"open in this task; a turn inside it must be parallel")
    try:
        async with lock:
            yield
    finally:
        if not lock.locked() and slots.get(session_id) is lock:  # no turn holds or awaits it
            del slots[session_id]


_END_ATTEMPTS = 3

_UNANSWERED_REASONS = ("shutdown", "cancelled")
"""Turn reasons that leave the turn's held messages held (told about at the next recovery):
the runtime's stop, or a cancel from outside that nobody chose for the turn. A turn that
completed, failed, or was cancelled on purpose (``steer``, ``clear``, ``/cancel``, ``timeout``)
dealt with them; but for one that failed while the runtime stopped (a host's turn, which the
stop does not cancel: its question withdrawn, its send refused), which the stop cut too."""


async def _record_end(store: Store, turn_id: str, ops: list[Op]) -> None:
    """Write a turn's end. A write the writer lost (it crashed; it restarts) is written again,
    up to ``_END_ATTEMPTS`` times in all; ``end_turn`` changes nothing the second time. Never
    raises an ``Exception``: the turn's own outcome matters more."""
    for attempt in range(1, _END_ATTEMPTS + 1):
        try:
            await store.commit(ops)
            return
        except StoreClosedError as exc:  # the writer is gone for good
            error: Exception = exc
            break
        except Exception as exc:  # noqa: BLE001 - logged, then written again
            error = exc
            log.info("event=turn_end_retry turn=%s attempt=%d error=%s", turn_id, attempt,
                     field(repr(exc)))
    log.warning("event=turn_end_not_recorded turn=%s error=%s", turn_id, field(str(error)))
