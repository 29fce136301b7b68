"""One child's place in its supervisor, and the task that runs its incarnations.

The *child boundary* is here: an incarnation that raises is a crash, whatever it raised (only
``BaseException``s that are not ``Exception`` pass through), and a ``Cancelled`` that the
child's own *fault scope* absorbed (a fault plan's ``"cancel"``, or ``inject_cancel``) becomes an
:class:`~tidings.errors.InjectedFault` crash. A cancellation from outside (the shutdown ladder,
the supervisor's own scope) is never turned into a fault: trio lets the fault scope absorb only
its own cancellation. An error the child's cleanup raises beside such a cancellation (in one
group, from the child's own nursery) is recorded as a ``shutdown_error`` and logged, like any
error while stopping; only the cancellation goes on, so a stop or a restart still completes.
A ``Cancelled`` raised while nothing cancels the child (re-raised from another scope) is a
crash too: only a real cancellation passes through.
"""

from __future__ import annotations

import logging
import math
from typing import TYPE_CHECKING, final

import attrs
import trio

from tidings.supervisor._backoff import BackoffTimer
from tidings.supervisor._faults import FaultPlan, Seam, act_at, injected_fault
from tidings.supervisor._log import describe, log_event
from tidings.supervisor._mailbox import Mailbox, MailboxReceiver
from tidings.supervisor._records import ChildState
from tidings.supervisor._spec import ChildContext, ChildSpec

if TYPE_CHECKING:
    from tidings.supervisor._supervisor import Supervisor

__all__ = ["ChildSlot", "Ending", "StartResult", "being_cancelled", "run_child", "settle_exit"]


@final
class ChildSlot:
    """A child's place in its supervisor; it outlives incarnations (name, mailbox, counters)."""

    __slots__ = ("backoff", "delay", "done", "exit_owed", "fault_scope", "fault_seam",
                 "incarnation", "mailbox", "ready_at", "receiver", "removed", "restarts",
                 "scope", "spec", "state", "stopping", "task")

    def __init__(self, spec: ChildSpec, plan: FaultPlan | None) -> None:
        self.spec = spec
        self.mailbox = Mailbox(spec.name, spec.mailbox_size, plan, self.cancel_fault,
                               spec.dead_letter)
        self.state: ChildState = "starting"
        self.incarnation = 0
        self.restarts = 0
        self.task: trio.lowlevel.Task | None = None
        self.scope: trio.CancelScope | None = None  # the task's scope: the ladder cancels it
        self.done: trio.Event | None = None  # set when the task running this child has ended
        self.fault_scope: trio.CancelScope | None = None  # the current incarnation's
        self.fault_seam: str | None = None
        self.receiver: MailboxReceiver | None = None
        self.stopping = False  # the shutdown ladder is stopping it: its ending is no crash
        self.removed = False  # forgotten by the supervisor
        self.ready_at = 0.0
        self.delay = 0.0  # backoff before the next incarnation
        self.backoff: BackoffTimer | None = None
        # on_exit not called yet: it is, once, when the child will never run again (its task
        # ended for good, or it never had one: a start that never reached it, a stop first).
        self.exit_owed = True

    def __repr__(self) -> str:
        return f"<ChildSlot {self.spec.name!r} {self.state} incarnation={self.incarnation}>"

    def cancel_fault(self, seam: Seam | str | None) -> bool:
        """Cancel the running incarnation's fault scope; False when none is running."""
        scope = self.fault_scope
        if scope is None:
            return False
        if not scope.cancel_called:
            self.fault_seam = None if seam is None else str(seam)
            where = "" if seam is None else f" at {seam}"
            scope.cancel(reason=f"injected fault{where} of {self.spec.name}")
        return True


@final
@attrs.frozen
class StartResult:
    """What a starter learns from ``nursery.start``: ready (``value``), failed, or stopped."""

    value: object = None
    error: BaseException | None = None
    stopped: bool = False


@final
@attrs.frozen
class Ending:
    """How an incarnation ended: its error (``None``: returned), whether it had become ready,
    and how long it ran after that."""

    error: BaseException | None
    ready: bool
    ran_for: float


@final
class _Starter:
    """The ``nursery.start`` caller waiting for a child's first readiness; told exactly once."""

    __slots__ = ("_status", "told")

    def __init__(self, status: trio.TaskStatus[StartResult]) -> None:
        self._status = status
        self.told = False

    def tell(self, result: StartResult) -> None:
        if not self.told:
            self.told = True
            self._status.started(result)


@final
class _Readiness(trio.TaskStatus[object]):
    """The ``task_status`` a child is given: lifts the start deadline, tells the starter."""

    def __init__(self, slot: ChildSlot, starter: _Starter | None,
                 start_scope: trio.CancelScope, supervisor: str) -> None:
        self._slot = slot
        self._supervisor = supervisor
        self._starter = starter
        self._start_scope = start_scope
        self.called = False

    def __repr__(self) -> str:
        return f"<task status of child {self._slot.spec.name!r}>"

    def started(self, value: object = None) -> None:
        """Report readiness (``value`` is returned by ``start_child``). Call it once."""
        if self.called:
            raise RuntimeError("called 'started' twice on the same task status")
        self.called = True
        self._start_scope.deadline = math.inf
        slot = self._slot
        slot.ready_at = trio.current_time()
        if not slot.stopping:
            slot.state = "running"
        log_event(logging.DEBUG, "child_ready", supervisor=self._supervisor, child=slot.spec.name,
                  incarnation=slot.incarnation)
        if self._starter is not None:
            self._starter.tell(StartResult(value=value))


async def _run_incarnation(sup: Supervisor, slot: ChildSlot, starter: _Starter | None) -> Ending:
    spec = slot.spec
    plan = sup.fault_plan
    slot.incarnation += 1
    slot.state = "starting"
    receiver = slot.mailbox._open_receiver(slot.cancel_fault)
    fault_scope = trio.CancelScope()
    slot.receiver, slot.fault_scope, slot.fault_seam = receiver, fault_scope, None
    timeout = spec.start_timeout
    deadline = math.inf if timeout is None else trio.current_time() + timeout
    start_scope = trio.CancelScope(deadline=deadline)
    ready = _Readiness(slot, starter, start_scope, sup.name)
    ctx = ChildContext(spec.name, slot.incarnation, receiver, sup)
    error: BaseException | None = None
    try:
        with start_scope, fault_scope:
            if plan is not None:
                act_at(plan, spec.name, Seam.CHILD_START, slot.cancel_fault)
            await spec.fn(ctx, task_status=ready)
            if (plan is not None and receiver._pending_after
                    and act_at(plan, spec.name, Seam.AFTER_MESSAGE, slot.cancel_fault)):
                await trio.lowlevel.checkpoint()
    except Exception as exc:  # noqa: BLE001 -- the child boundary: any failure is a crash
        error = _one_error(exc)
    except BaseException as exc:  # a cancellation from outside: it propagates, is no fault...
        if not _cancelled_by_nothing(exc):
            _record_superseded(sup, slot, receiver, fault_scope)  # ...but a fault it cut short
            cancelled, failed = _split_cancelled(exc)  # still leaves its record, and so does
            if cancelled is None or failed is None:  # an error its cleanup raised beside the
                raise  # cancellation: recorded as an error while stopping, and not raised
            sup._record(slot, _one_error(failed), "shutdown_error")  # (a plain one is the same)
            raise cancelled from failed
        error = exc  # ...unless nothing cancels it: then it is a crash like any other
    finally:
        shutdown_fault = receiver._shutdown_fault  # injected, but never read: it still lands
        receiver._detach()
        slot.receiver = slot.fault_scope = None
    final_error: BaseException | None = error
    if error is None and shutdown_fault:
        final_error = error = injected_fault(spec.name, Seam.SHUTDOWN, "raise")
    elif shutdown_fault or (fault_scope.cancel_called and not fault_scope.cancelled_caught
                            and error is not None):
        # it crashed with another error while the injected fault was on its way: the record
        # is that error; the fault is not lost, it is logged as overtaken by it
        log_event(logging.INFO, "fault_superseded", supervisor=sup.name, child=spec.name,
                  seam=Seam.SHUTDOWN if shutdown_fault else slot.fault_seam,
                  error_type=type(error).__name__)
    if fault_scope.cancelled_caught or (fault_scope.cancel_called and error is None):
        final_error = injected_fault(spec.name, slot.fault_seam, "cancel")
    elif start_scope.cancelled_caught:  # (it may have called started() just too late)
        final_error = trio.TooSlowError(
            f"child {spec.name!r} did not report readiness within {timeout} seconds")
    elif error is None and not ready.called:
        ready.started()  # it returned without started(): it started, then exited
    ran_for = trio.current_time() - slot.ready_at if ready.called else 0.0
    return Ending(final_error, ready.called, ran_for)


def being_cancelled() -> bool:
    """Whether a cancellation is on for the calling task (its effective deadline has passed).

    For a child's task: its ladder's (``slot.stopping``) or one from outside, its supervisor
    going away without a graceful stop (its state still reads running). Either way an
    incarnation that ends now is no crash: it is not restarted."""
    return trio.current_effective_deadline() == -math.inf


def _one_error(error: Exception) -> Exception:
    """A group that holds one error (and maybe cancellations) is that error: a child's nursery
    wraps what it raises, and the record should say what failed, not ``ExceptionGroup``."""
    if not isinstance(error, BaseExceptionGroup):
        return error
    leaves: list[BaseException] = []
    stack: list[BaseException] = [error]
    while stack:
        current = stack.pop()
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)
        else:
            leaves.append(current)
    errors = [leaf for leaf in leaves if not isinstance(leaf, trio.Cancelled)]
    if len(errors) == 1 and isinstance(errors[0], Exception):
        return errors[0]
    return error


def _cancelled_by_nothing(exc: BaseException) -> bool:
    """Whether ``exc`` holds a ``Cancelled`` (beside errors at most) though nothing cancels the
    child's task: one re-raised from another scope (a cancelled task's outcome, unwrapped).

    Let through as an outer cancellation, it reached the supervisor's nursery, which took it
    for its own: the supervisor ended at once and in silence (no graceful stop, nothing
    recorded), and ``open_supervisor`` returned normally with its body cut short.
    """
    if being_cancelled():  # a cancellation is on: it is real
        return False
    if isinstance(exc, BaseExceptionGroup):
        cancelled, rest = exc.split(trio.Cancelled)
        return cancelled is not None and (rest is None or isinstance(rest, Exception))
    return isinstance(exc, trio.Cancelled)


def _split_cancelled(exc: BaseException
                     ) -> tuple[BaseException | None, Exception | None]:
    """A group from a cancelled child split into its cancellations and its errors.

    A child cancelled from outside (the shutdown ladder's timeout, a group restart) whose
    cleanup raises inside its own nursery ends with ``Cancelled`` and that error in one group,
    which is no ``Exception``: re-raised whole, the error escaped the child's scope and failed
    the supervisor (a restart among them); dropped, it was lost. ``(exc, None)`` for anything
    else.
    """
    if not isinstance(exc, BaseExceptionGroup):
        return exc, None
    cancelled, rest = exc.split(trio.Cancelled)
    if not isinstance(rest, Exception):  # no error, or a KeyboardInterrupt among them
        return exc, None
    return cancelled, rest


def _record_superseded(sup: Supervisor, slot: ChildSlot, receiver: MailboxReceiver,
                       fault_scope: trio.CancelScope) -> None:
    """An injected fault that an outer cancellation overtook (the child was being stopped
    or its supervisor cancelled) is recorded, as an error while stopping: never masked."""
    if receiver._shutdown_fault:
        receiver._shutdown_fault = False
        fault = injected_fault(slot.spec.name, Seam.SHUTDOWN, "raise")
    elif fault_scope.cancel_called:
        fault = injected_fault(slot.spec.name, slot.fault_seam, "cancel")
    else:
        return
    sup._record(slot, fault, "shutdown_error")


async def run_child(sup: Supervisor, slot: ChildSlot, *,
                    task_status: trio.TaskStatus[StartResult] = trio.TASK_STATUS_IGNORED) -> None:
    """The task that runs one child: incarnations in a loop while restarts happen in place.

    Launched by the supervisor under ``slot.scope`` (so the ladder can cancel it before it
    runs). With a starter waiting (``nursery.start``), the first incarnation's readiness or
    failure is reported to it through a :class:`StartResult`, never as an exception.
    """
    starter = None if task_status is trio.TASK_STATUS_IGNORED else _Starter(task_status)
    scope, done = slot.scope, slot.done
    assert scope is not None
    assert done is not None
    slot.task = trio.lowlevel.current_task()
    try:
        with scope:
            while not slot.stopping:
                if slot.delay > 0:
                    slot.state = "backoff"
                    await trio.sleep(slot.delay)
                    slot.delay = 0.0
                ending = await _run_incarnation(sup, slot, starter)
                if starter is not None:
                    if not ending.ready:
                        starter.tell(StartResult(error=ending.error))
                        return
                    starter = None
                restart = sup._child_ended(slot, ending)
                if not isinstance(restart, bool):  # one_for_one: decided at the tick's end
                    restart = await sup._tick_decision(restart, slot)
                if not restart:
                    if not sup._live() or (not slot.stopping and being_cancelled()):
                        # Its supervisor is stopping (or being cancelled from outside), so it
                        # will never run again: close its mailbox now, as below, so a shielded
                        # cleanup waiting for its answer (a turn's end, for the writer) is
                        # told instead of waiting forever.
                        slot.mailbox._close()
                    return
    except BaseException:
        # Cancelled from outside (its supervisor is going away) or interrupted: it will never
        # run again. Its mailbox is closed now (what it buffered goes to its dead-letter hook),
        # not when the supervisor has exited: that exit waits for the body, whose shielded
        # cleanup may be waiting for this very child to answer (a turn's end, for the writer).
        slot.mailbox._close()
        raise
    finally:
        slot.task = None
        if slot.state in ("starting", "running", "backoff"):  # not stopped, nor to restart
            slot.state = "exited"
        done.set()
        # Else a group restart may run it again (it stopped for one, or failed into one):
        # settle_exit calls on_exit if that restart never comes.
        if sup.strategy == "one_for_one" or slot.removed or not sup._live():
            settle_exit(sup, slot)  # it will never run again
    if starter is not None:  # stopped (no-op if it had been ready)
        starter.tell(StartResult(stopped=True))


def settle_exit(sup: Supervisor, slot: ChildSlot) -> None:
    """The child will never run again: call its ``on_exit`` unless it has been called, once
    per child however many of the ways it can end for good come together (its task ended for
    good; or it was stopped, forgotten, or its supervisor stops while its task had ended
    awaiting a group restart, or before it ever had a task: the start never reached it, or it
    was stopped first). Sync."""
    if not slot.exit_owed:
        return
    slot.exit_owed = False
    if slot.spec.on_exit is None:
        return
    try:
        slot.spec.on_exit()
    except Exception as exc:  # noqa: BLE001 - a hook's failure is logged, not raised
        error_type, text = describe(exc)
        log_event(logging.ERROR, "on_exit_failed", supervisor=sup.name,
                  child=slot.spec.name, error_type=error_type, error=text)
