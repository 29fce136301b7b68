"""The supervisor: its children, restart decisions, strategies and restart intensity."""

from __future__ import annotations

import logging
import math
import sys
from collections import deque
from collections.abc import Callable, Iterable
from functools import partial
from typing import Literal, final

import trio

from tidings.errors import (
    ChildNotFoundError,
    ChildStartError,
    RestartIntensityExceeded,
    SupervisorError,
    ValidationError,
)
from tidings.supervisor._backoff import BackoffTimer
from tidings.supervisor._child import (
    ChildSlot,
    Ending,
    StartResult,
    being_cancelled,
    run_child,
    settle_exit,
)
from tidings.supervisor._faults import FaultPlan, Seam, _to_seam, act_at
from tidings.supervisor._intensity import Intensity, RestartWindow
from tidings.supervisor._ladder import run_ladder
from tidings.supervisor._log import describe, field, log_event, logger
from tidings.supervisor._mailbox import Mailbox
from tidings.supervisor._records import (
    ChildStatistics,
    RestartAction,
    RestartRecord,
    SupervisorState,
    SupervisorStatistics,
)
from tidings.supervisor._spec import (
    STRATEGIES,
    ChildSpec,
    Strategy,
    check_unique_names,
    child_specs,
)
from tidings.supervisor._strategies import LIVE, RestartRequest, serve_group_restarts

__all__ = ["Supervisor", "check_options"]

_Decision = Literal["restart", "escalate", "retire", "stop"]


@final
class Supervisor:
    """A running supervisor. Get one from :func:`open_supervisor` (or as the value a
    :func:`supervisor_child` reports as started); it is not constructed directly.

    Children are kept by unique name in start order. ``one_for_one`` restarts happen in the
    crashed child's own task; ``one_for_all`` / ``rest_for_one`` group restarts are run one at a
    time by a helper task (see ``_strategies``).
    """

    def __init__(self, children: Iterable[ChildSpec], *, strategy: Strategy,
                 intensity: Intensity, name: str, fault_plan: FaultPlan | None,
                 restart_log_size: int) -> None:
        specs = child_specs(children)
        check_options(specs, strategy=strategy, intensity=intensity, name=name,
                      fault_plan=fault_plan)
        if (not isinstance(restart_log_size, int) or isinstance(restart_log_size, bool)
                or not 1 <= restart_log_size <= sys.maxsize):  # past it no deque is made
            raise ValidationError("restart_log_size",
                                  f"must be an int from 1 to {sys.maxsize}, "
                                  f"got {restart_log_size!r:.80}")
        self._name = name
        self._strategy: Strategy = strategy
        self._intensity = intensity
        self._plan = fault_plan
        self._children: dict[str, ChildSlot] = {s.name: ChildSlot(s, fault_plan) for s in specs}
        self._window = RestartWindow(intensity)
        self._log: deque[RestartRecord] = deque(maxlen=restart_log_size)
        self._restarts = 0
        self._state: SupervisorState = "starting"
        self._failure: RestartIntensityExceeded | None = None
        self._body_scope = trio.CancelScope()
        self._lock = trio.Lock()  # start, group restarts and shutdown never interleave
        self._requests, self._request_queue = trio.open_memory_channel[RestartRequest](math.inf)
        self._restarts_due = 0  # group-restart requests queued or being served
        self._nursery: trio.Nursery | None = None
        self._serving_restarts = False
        self._launching: ChildSlot | None = None  # the lock holder waits for its readiness
        self._giving_up = False  # it escalated in the scheduling batch running now
        # one_for_one crashes that would restart, decided together at their tick's end
        self._open_tick: _Tick | None = None  # this scheduling batch's
        self._closed_ticks: list[_Tick] = []  # of batches that have ended, not decided yet
        self._deciding_tick = False

    def __repr__(self) -> str:
        return (f"<Supervisor {self._name!r} {self._strategy} {self._state} "
                f"children={len(self._children)}>")

    # --- read side -----------------------------------------------------------------------------

    @property
    def name(self) -> str:
        """The supervisor's name, as its :class:`SupervisorStatistics` give it."""
        return self._name

    @property
    def strategy(self) -> Strategy:
        """How a child's failure restarts its siblings: ``one_for_one``, ``one_for_all`` or
        ``rest_for_one``."""
        return self._strategy

    @property
    def intensity(self) -> Intensity:
        """The restart budget: more restarts in its period and the supervisor gives up."""
        return self._intensity

    @property
    def fault_plan(self) -> FaultPlan | None:
        """The fault plan injecting failures into its children, or None."""
        return self._plan

    @property
    def restart_log(self) -> tuple[RestartRecord, ...]:
        """Every restart decision so far, oldest first (the newest ``restart_log_size``)."""
        return tuple(self._log)

    def statistics(self) -> SupervisorStatistics:
        """A frozen snapshot of the supervisor and its children (in start order)."""
        children = tuple(
            ChildStatistics(name=slot.spec.name, state=slot.state, incarnation=slot.incarnation,
                            restarts=slot.restarts, mailbox_depth=slot.mailbox.depth)
            for slot in self._children.values())
        return SupervisorStatistics(name=self._name, strategy=self._strategy, state=self._state,
                                    children=children, restarts=self._restarts)

    def mailbox(self, name: str) -> Mailbox:
        """The send side of the mailbox of child ``name``; it stays valid across restarts.

        Raises:
          ChildNotFoundError: (a SupervisorError and a LookupError) no child has that name
            (``.child`` names it).
        """
        return self._slot(name).mailbox

    def child_task(self, name: str) -> trio.lowlevel.Task | None:
        """The task running child ``name``'s current incarnation; ``None`` when no incarnation
        runs (it is waiting out a backoff or a group restart, or it was stopped).

        Raises:
          ChildNotFoundError: no child has that name.
        """
        slot = self._slot(name)
        return slot.task if slot.fault_scope is not None else None

    # --- children ------------------------------------------------------------------------------

    async def start_child(self, spec: ChildSpec) -> object:
        """Add a child after all the others and start it; blocks until it is ready.

        Returns the value it passed to ``task_status.started()``.

        Raises:
          ValidationError: ``spec`` is not a :class:`ChildSpec`.
          SupervisorError: a child of that name exists, or the supervisor is stopping.
          ChildStartError: it failed or timed out before it was ready (it is forgotten; the
            cause is chained).
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        slot = self._register(spec)
        try:
            result = await self._launch(slot)
        except BaseException:
            if slot.done is None or not slot.done.is_set():  # its task never ran: refused,
                slot.exit_owed = False  # as never added (no on_exit)
            self._forget(slot)
            raise
        if result.error is None and not result.stopped:
            return result.value
        self._forget(slot)
        raise self._start_error(slot, result)

    def start_child_soon(self, spec: ChildSpec) -> None:
        """Add a child after all the others and start it without waiting. Never blocks.

        A failure before it is ready counts as a crash of its first incarnation (its restart
        type decides what follows). Raises like :meth:`start_child`, minus ChildStartError;
        a child it refuses is not added, and its ``on_exit`` is not called (it never ran).
        """
        slot = self._register(spec)
        assert self._nursery is not None
        slot.scope, slot.done = trio.CancelScope(), trio.Event()
        try:
            self._nursery.start_soon(run_child, self, slot, name=self._task_name(slot))
        except RuntimeError:
            # The nursery has closed: cancelled from outside, the supervisor skipped its
            # graceful stop and is not marked stopping yet (_finish runs once its task is
            # back). It is stopping all the same: refused as then, nothing left registered
            # (and never added: no on_exit).
            slot.exit_owed = False
            self._forget(slot)
            raise self._stopping_error(spec) from None

    async def stop_child(self, name: str) -> None:
        """Stop child ``name`` with the shutdown ladder, then forget it. Always a checkpoint.

        Its mailbox is closed at once (senders get MailboxClosedError); buffered messages are
        still handed to the child before its ``async for`` ends. Returns once its task ended.
        If the caller is cancelled before that, the child is cancelled: it is forgotten
        already, so no later stop (not even the supervisor's own) would end it.

        Called by the child itself (or by a task it runs), it returns at once and the ladder
        runs beside it: waiting for its own caller to end, it waited out the child's
        ``shutdown_timeout`` and killed it (or, with ``None``, waited forever).

        Raises:
          ChildNotFoundError: no child has that name.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        slot = self._slot(name)
        slot.removed = True  # from now on nobody restarts it
        del self._children[name]
        if _called_within(slot.task):
            assert self._nursery is not None
            self._nursery.start_soon(self._stop_forgotten, slot,
                                     name=f"{self._task_name(slot)}/stop")
            await trio.lowlevel.cancel_shielded_checkpoint()
            return
        await self._stop_forgotten(slot)

    async def _stop_forgotten(self, slot: ChildSlot) -> None:
        """:meth:`stop_child`'s ladder, for a child already forgotten."""
        try:
            await run_ladder(slot, self._plan, supervisor=self._name, final=True)
        finally:
            if slot.done is not None and not slot.done.is_set() and slot.scope is not None:
                slot.scope.cancel(reason=f"stop of {slot.spec.name} cut short")
            slot.mailbox._close()
            slot.state = "stopped"
            settle_exit(self, slot)

    def inject_cancel(self, name: str, *, seam: Seam | str | None = None) -> bool:
        """Cancel child ``name``'s fault scope: it crashes with InjectedFault at its next
        checkpoint. Returns False when no incarnation of it is running. Never blocks.

        Raises:
          ChildNotFoundError: no child has that name.
        """
        return self._slot(name).cancel_fault(seam)

    def fault_point(self, name: str, seam: Seam | str) -> None:
        """Consult the fault plan at ``seam`` for child ``name``, from that child's own task.

        For ``"raise"`` it raises :class:`~tidings.errors.InjectedFault` here; for
        ``"cancel"`` it cancels the child's fault scope, so the child crashes at its next
        checkpoint. Without a plan (or a rule that fires) it does nothing. Never blocks; never
        a checkpoint. This is how an actor adds a seam of its own (e.g. ``Seam.DELIVER``).

        Raises:
          InjectedFault: the plan injects ``"raise"``.
          ChildNotFoundError: no child has that name.
        """
        if self._plan is None:
            return
        act_at(self._plan, name, _to_seam(seam), self._slot(name).cancel_fault)

    def _slot(self, name: str) -> ChildSlot:
        try:
            return self._children[name]
        except KeyError:
            raise ChildNotFoundError(f"supervisor {self._name!r} has no child named {name!r}",
                                     child=name) from None

    def _register(self, spec: ChildSpec) -> ChildSlot:
        if not isinstance(spec, ChildSpec):
            raise ValidationError("spec", f"must be a ChildSpec, got {spec!r}")
        if self._state not in LIVE:
            raise self._stopping_error(spec)
        if spec.name in self._children:
            raise SupervisorError(f"supervisor {self._name!r} already has a child named "
                                  f"{spec.name!r}", child=spec.name)
        slot = self._children[spec.name] = ChildSlot(spec, self._plan)
        return slot

    def _stopping_error(self, spec: ChildSpec) -> SupervisorError:
        state = self._state if self._state not in LIVE else "stopping"
        return SupervisorError(f"supervisor {self._name!r} is {state}: it takes no new "
                               f"children", child=spec.name)

    def _forget(self, slot: ChildSlot) -> None:
        slot.removed = True
        slot.state = "stopped"
        if self._children.get(slot.spec.name) is slot:
            del self._children[slot.spec.name]
        slot.mailbox._close()
        settle_exit(self, slot)

    def _task_name(self, slot: ChildSlot) -> str:
        return f"{self._name}/{slot.spec.name}"

    async def _launch(self, slot: ChildSlot) -> StartResult:
        assert self._nursery is not None
        slot.scope, slot.done, slot.stopping = trio.CancelScope(), trio.Event(), False
        result: StartResult = await self._nursery.start(run_child, self, slot,
                                                        name=self._task_name(slot))
        return result

    async def _launch_locked(self, slot: ChildSlot) -> StartResult:
        """:meth:`_launch` by the holder of the lock (the initial start, a group restart).

        While it waits for the child's readiness (or its restart backoff), a shutdown or an
        escalation stops that child with the shutdown ladder instead of waiting for it: a
        backoff in full, or with no ``start_timeout`` forever.
        """
        self._launching = slot
        try:
            return await self._launch(slot)
        finally:
            self._launching = None

    def _launching_unstopped(self) -> ChildSlot | None:
        """The child the lock holder waits for, when no ladder is stopping it yet."""
        slot = self._launching
        if slot is None or slot.stopping or slot.done is None or slot.done.is_set():
            return None
        return slot

    def _start_error(self, slot: ChildSlot, result: StartResult) -> ChildStartError:
        name = slot.spec.name
        if result.error is None:
            message = "was stopped before it reported readiness"
        else:
            error_type, text = describe(result.error)
            message = f"failed to start: {error_type}: {text}"
        error = ChildStartError(f"child {name!r} of supervisor {self._name!r} {message}",
                                child=name)
        error.__cause__ = result.error
        log_event(logging.ERROR, "child_start_failed", supervisor=self._name, child=name,
                  incarnation=slot.incarnation, error=str(error))
        return error

    # --- decisions -----------------------------------------------------------------------------

    def _live(self) -> bool:
        """Starting or running: not stopping (a child that ends now is not restarted)."""
        return self._state in LIVE

    def _child_ended(self, slot: ChildSlot, ending: Ending) -> bool | _Tick:
        """Called by a child's task when an incarnation ended; True: restart it in place.

        A crash that would restart is not decided here: it joins this scheduling batch's
        :class:`_Tick`, returned for :meth:`_tick_decision` to await (under ``one_for_all``
        / ``rest_for_one`` the decision queues its group restart, and the task then ends).
        Whether a group restart was due as it crashed is noted with it (see
        :class:`RestartRequest`).
        """
        try:
            self._decide_closed_ticks(slot)  # an earlier tick's crashes come first
        except BaseException:
            # Deciding them raised, and fails the supervisor from this task: this ending is
            # then one while stopping, recorded as it is when the error leaves another child's
            # task first (whichever trio ran first), not lost with this task.
            self._stopped(slot, ending.error, anyway=True)
            raise
        if self._settle(slot, ending.error) is not None:
            return False
        tick = self._open_tick
        if tick is None:
            tick = self._open_tick = _Tick()
            trio.lowlevel.add_instrument(_AfterThisTick(self._close_tick))
        tick.endings.append((slot, ending, self._restarts_due > 0))
        return tick

    def _request_group_restart(self, slot: ChildSlot, ending: Ending, *, outside: bool,
                               counted: bool) -> bool:
        """Decide a group strategy's crash at its tick's end: queue its group restart if
        the intensity lets it (counted with ``counted``); True if queued.

        A group restart's own ladder that began stopping it meanwhile is no stop (it is not
        forgotten, the supervisor is live): that restart covers it, as before the tick."""
        if self._stopped(slot, ending.error, anyway=outside, ladder=False):
            return False
        if self._admit(slot, ending.error, ending.ran_for, count=counted) != "restart":
            return False
        slot.state = "restarting"
        self._requests.send_nowait(RestartRequest(slot, slot.incarnation, ending.error, counted))
        self._restarts_due += 1
        return True

    async def _tick_decision(self, tick: _Tick, slot: ChildSlot) -> bool:
        """Wait for the end of the batch ``slot`` crashed in (one checkpoint: the task runs
        again in the next batch, no later), then whether the tick's decision restarts it."""
        await trio.lowlevel.cancel_shielded_checkpoint()
        self._decide_closed_ticks(slot)
        return slot in tick.restart

    def _close_tick(self) -> None:
        """The batch has ended (an instrument's hook: sync, no task): its crashes are all in."""
        if self._open_tick is not None:
            self._closed_ticks.append(self._open_tick)
            self._open_tick = None

    def _decide_closed_ticks(self, caller: ChildSlot) -> None:
        """Decide the crashes of the ticks that have ended, each tick's in start order.

        Two ``one_for_one`` children crashing in one tick were decided in the order trio ran
        them: with one restart left, which one restarted and which escalated (and was named)
        fell to trio's shuffle. Decided together, the earlier child in start order takes the
        restart left, the later ones escalate, and the tick it gave up in is over: a crash
        from now on is one while stopping.

        ``caller``: the child whose task decides (every child task runs under the
        supervisor's nursery). A cancellation from outside the supervisor that came by then,
        in the tick of the crashes at the latest, reaches every child task alike: the crashes
        are then no crashes (``shutdown_error``), whichever trio ran first in their tick.
        A caller whose own ladder cancelled it cannot see such a cancellation (see
        :meth:`_cancelled_from_outside`): it leaves the ticks to a child of theirs that can,
        whose task asks in this same batch (each waits one checkpoint in
        :meth:`_tick_decision`), and decides them only when none can.

        A decision that raises (the host's logging broke on its line) does not leave the
        others undecided: each crash is decided and recorded, then what was raised goes on,
        failing the caller's task and so the supervisor (several errors: in one group).
        """
        if not self._sees_outside(caller) and any(
                slot is not caller and self._sees_outside(slot)
                for tick in self._closed_ticks for slot, _, _ in tick.endings):
            return
        outside = self._cancelled_from_outside(caller)
        errors: list[BaseException] = []
        queued = False  # a group restart: the crashes after it are covered, not counted
        while self._closed_ticks:
            tick = self._closed_ticks.pop(0)
            order = {name: index for index, name in enumerate(self._children)}
            self._deciding_tick = True
            try:
                for slot, ending, due in sorted(tick.endings, key=lambda entry: order.get(
                        entry[0].spec.name, len(order))):
                    try:
                        if self._strategy != "one_for_one":
                            queued = self._request_group_restart(
                                slot, ending, outside=outside,
                                counted=not (due or queued)) or queued
                        elif self._stopped(slot, ending.error, anyway=outside):
                            continue
                        elif self._admit(slot, ending.error, ending.ran_for) == "restart":
                            tick.restart.add(slot)
                    except BaseException as exc:  # noqa: BLE001 -- raised below, once all are
                        errors.append(exc)  # decided (sync: no Cancelled comes in here)
            finally:
                self._deciding_tick = False
            if self._giving_up:
                try:
                    self._gave_up()
                except BaseException as exc:  # noqa: BLE001 -- raised below, with the others
                    errors.append(exc)
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise BaseExceptionGroup(f"deciding the crashes of supervisor {self._name!r}'s "
                                     f"children failed {len(errors)} times", errors)

    def _sees_outside(self, slot: ChildSlot) -> bool:
        """Whether ``slot``'s task, deciding, would see a cancellation from outside the
        supervisor (:meth:`_cancelled_from_outside`): its own ladder has not cancelled it,
        or the nursery's cancellation, which it sees anyway, is on. Sync."""
        return (slot.scope is None or not slot.scope.cancel_called
                or (self._nursery is not None and self._nursery.cancel_scope.cancel_called))

    def _cancelled_from_outside(self, caller: ChildSlot) -> bool:
        """Whether the calling task, ``caller``'s, is being cancelled by something other than
        ``caller``'s own stop: a scope around the supervisor (a deadline, the host's
        shutdown), or its nursery (a child's or the body's ``KeyboardInterrupt``).

        Its own ladder's cancellation (``caller.scope``) says nothing of the others: while
        that is on, the nursery's is still seen, a scope further out is not."""
        if self._nursery is not None and self._nursery.cancel_scope.cancel_called:
            return True
        scope = caller.scope
        return being_cancelled() and (scope is None or not scope.cancel_called)

    def _stopped(self, slot: ChildSlot, error: BaseException | None, *,
                 anyway: bool = False, ladder: bool = True) -> bool:
        """Whether ``slot`` or its supervisor is stopping (or *anyway*), so that its ending
        is no crash: recorded ``shutdown_error`` if it raised, neither restarted nor counted.
        ``removed``: stop_child forgot it, maybe (called from within the child) before its
        ladder began: an ending then is no crash, whichever of the two ran first. Without
        ``ladder``, a ladder stopping it (``slot.stopping``) does not count: a group
        restart's, when the supervisor is live and the child not forgotten.

        :meth:`_settle` asks at the ending; the decision of its tick asks again at the
        tick's end, as a stop may have begun later in that tick (``being_cancelled``
        it cannot ask for another child's task: :meth:`_cancelled_from_outside` tells it
        of a cancellation that reaches them all)."""
        if not (anyway or (ladder and slot.stopping) or slot.removed
                or (self._state not in LIVE and not self._giving_up)):
            return False
        if error is not None:
            self._record(slot, error, "shutdown_error")
        return True

    def _count_restart(self, slot: ChildSlot, error: BaseException | None) -> bool:
        """Count toward the intensity a group restart whose crash was not counted when it came
        (see :class:`RestartRequest`), now that it is served; False: the supervisor gave up."""
        if self._window.admit(trio.current_time()):
            self._count(slot)
            return True
        slot.state = "exited"  # its task ended; it will never run again
        self._record(slot, error, "escalate")
        self._escalate(slot, error)
        return False

    def _decide(self, slot: ChildSlot, error: BaseException | None, ran_for: float, *,
                count: bool = True) -> _Decision:
        decision = self._settle(slot, error)
        return decision if decision is not None else self._admit(slot, error, ran_for,
                                                                 count=count)

    def _settle(self, slot: ChildSlot, error: BaseException | None) -> _Decision | None:
        """The decisions the restart intensity has no say in (``None``: it has)."""
        spec = slot.spec
        # Stopping, or the deciding task (the child's, or the restart helper's) is being
        # cancelled: from outside, the supervisor's graceful stop is skipped and its state
        # still reads running, yet an ending then is no crash either
        if self._stopped(slot, error, anyway=being_cancelled()):
            return "stop"
        if spec.restart == "temporary" or (spec.restart == "transient" and error is None):
            if error is not None:
                self._record(slot, error, "forget")
            else:
                log_event(logging.DEBUG, "child_exited", supervisor=self._name, child=spec.name,
                          incarnation=slot.incarnation, restart=spec.restart)
            self._forget(slot)
            return "retire"
        return None

    def _admit(self, slot: ChildSlot, error: BaseException | None, ran_for: float, *,
               count: bool = True) -> _Decision:
        """A restart, if the intensity lets it (counted with ``count``), else escalation."""
        if self._giving_up:  # it gave up in this very tick: this restart goes over too
            self._record(slot, error, "escalate")
            self._escalate(slot, error)
            return "escalate"
        if count:
            if not self._window.admit(trio.current_time()):
                self._record(slot, error, "escalate")
                self._escalate(slot, error)
                return "escalate"
            self._count(slot)
        if slot.spec.backoff is not None:
            if slot.backoff is None:
                slot.backoff = BackoffTimer(slot.spec.backoff)
            slot.delay = slot.backoff.next_delay(ran_for)
        self._record(slot, error, "restart")
        return "restart"

    def _count(self, slot: ChildSlot) -> None:
        """A restart the intensity admitted: the statistics count it where the window does
        (a crash a group restart already due covers is counted by neither)."""
        slot.restarts += 1
        self._restarts += 1

    def _record(self, slot: ChildSlot, error: BaseException | None,
                action: RestartAction) -> None:
        error_type, text = describe(error)
        name = slot.spec.name
        self._log.append(RestartRecord(child=name, time=trio.current_time(), error=text,
                                       error_type=error_type, incarnation=slot.incarnation,
                                       action=action))
        if action == "restart":
            log_event(logging.INFO, "child_restarted", supervisor=self._name, child=name,
                      incarnation=slot.incarnation + 1, delay=slot.delay or None,
                      exit="normal" if error is None else None, error_type=error_type or None,
                      error=text or None)
        else:
            log_event(logging.WARNING, "child_failed", supervisor=self._name, child=name,
                      incarnation=slot.incarnation, action=action,
                      exit="normal" if error is None else None, error_type=error_type or None,
                      error=text or None)
        if error is not None and logger.isEnabledFor(logging.DEBUG):
            logger.debug("event=child_traceback supervisor=%s child=%s incarnation=%d",
                         field(self._name), field(name), slot.incarnation, exc_info=error)

    def _escalate(self, slot: ChildSlot, error: BaseException | None) -> None:
        """Give up: the failure names ``slot``, the body is cancelled, the children stop.

        Children crashing in the same tick (a resource they share went away) come in the
        order trio shuffled them. Until that scheduling batch has run, each later crash that
        goes over too is taken in (the caller recorded it ``escalate``), and the failure
        names the earliest of them in start order: never the order trio happened to pick.
        """
        # It will never run again: its senders fail now (and what is buffered goes to its
        # dead-letter hook) instead of waiting for it, maybe shielded, while the others stop.
        slot.mailbox._close()
        if self._failure is not None:  # the same tick: the earliest child is the one named
            order = list(self._children)
            named = self._failure.child
            if named in order and slot.spec.name in order and (
                    order.index(slot.spec.name) < order.index(named)):
                self._failure = self._failure_of(slot, error)
            return
        self._failure = self._failure_of(slot, error)
        self._state = "stopping"
        self._giving_up = True
        if not self._deciding_tick:  # (a tick decided together ends with its decision)
            trio.lowlevel.add_instrument(_AfterThisTick(self._gave_up))
        self._body_scope.cancel(reason=f"restart intensity of supervisor {self._name} exceeded")
        launching = self._launching_unstopped()
        if launching is not None and self._nursery is not None:
            self._nursery.start_soon(
                partial(run_ladder, launching, self._plan, supervisor=self._name, final=False),
                name=f"{self._task_name(launching)}/stop")

    def _failure_of(self, slot: ChildSlot, error: BaseException | None
                    ) -> RestartIntensityExceeded:
        name, limit = slot.spec.name, self._intensity
        failure = RestartIntensityExceeded(
            f"supervisor {self._name!r} gave up: child {name!r} ended and a restart would make "
            f"{len(self._window)} restarts within {limit.period} seconds "
            f"(max_restarts={limit.max_restarts})", child=name)
        failure.__cause__ = error
        return failure

    def _gave_up(self) -> None:
        """The tick it escalated in has run: a crash from now on is one while stopping."""
        self._giving_up = False
        assert self._failure is not None
        limit = self._intensity
        log_event(logging.ERROR, "restart_intensity_exceeded", supervisor=self._name,
                  child=self._failure.child, restarts=len(self._window), period=limit.period,
                  max_restarts=limit.max_restarts)

    # --- lifetime (driven by open_supervisor) --------------------------------------------------

    async def _start(self, nursery: trio.Nursery) -> BaseException | None:
        """Start the children in order, each ready before the next; the failure, if any."""
        self._nursery = nursery
        if self._strategy != "one_for_one":
            nursery.start_soon(serve_group_restarts, self, name=f"{self._name}/restarts")
            self._serving_restarts = True
        async with self._lock:
            for slot in list(self._children.values()):
                if self._state != "starting":
                    break
                if slot.removed:
                    continue
                result = await self._launch_locked(slot)
                if self._failure is not None:  # it escalated meanwhile (and stopped this one)
                    break
                if result.error is not None or (result.stopped and not slot.removed):
                    self._state = "stopping"
                    return self._start_error(slot, result)
            if self._state == "starting":
                self._state = "running"
                log_event(logging.INFO, "supervisor_started", supervisor=self._name,
                          strategy=self._strategy, children=len(self._children))
        return self._failure

    async def _shutdown(self, *, failed: bool) -> None:
        """Stop every child in reverse start order, each with its shutdown ladder.

        An outer cancellation (or a ``KeyboardInterrupt``) can cut this short in the middle of
        a ladder. The children not stopped yet then end by the nursery's cancellation, and
        :meth:`_finish` closes their mailboxes and marks them stopped once they have ended;
        here the ``finally`` only closes them for senders at once, so nobody keeps waiting
        (or buffering) for a child that will not run again.
        """
        if self._state in LIVE:
            self._state = "stopping"
        self._requests.close()
        if not self._serving_restarts:
            self._request_queue.close()
        remaining = list(reversed(self._children.values()))
        try:
            launching = self._launching_unstopped()
            if launching is not None:  # the lock holder waits for it: stop it first
                await run_ladder(launching, self._plan, supervisor=self._name, final=False)
            async with self._lock:
                remaining = list(reversed(self._children.values()))
                while remaining:
                    slot = remaining[0]
                    await run_ladder(slot, self._plan, supervisor=self._name, final=True)
                    remaining.pop(0)
                    slot.mailbox._close()
                    slot.state = "stopped"
                    settle_exit(self, slot)
        finally:
            for slot in remaining:  # sync: this may run with a cancellation on its way
                slot.mailbox._close_send()
        self._finish(failed=failed)

    def _finish(self, *, failed: bool) -> None:
        """Close every mailbox for good and record that the supervisor has stopped.

        Called once all children have ended: after a full :meth:`_shutdown`, and by
        ``open_supervisor`` after its nursery has exited however it exited, because a
        cancellation of the body or of the ladder skips (part of) the graceful stop. What is
        still buffered goes to the dead-letter hooks, blocked senders get MailboxClosedError,
        and no child's state stays ``running`` or ``stopping``. Sync (it runs in cleanup) and
        idempotent; it logs ``supervisor_stopped`` once.
        """
        self._requests.close()
        if not self._serving_restarts:  # else the restart helper owns (and closed) it
            self._request_queue.close()
        if self._state in LIVE:  # cut short: it takes no new child (an on_exit below may try)
            self._state = "stopping"
        for slot in list(self._children.values()):
            slot.mailbox._close()
            slot.state = "stopped"
            settle_exit(self, slot)
        if self._state in ("stopped", "failed"):
            return
        self._state = "failed" if failed or self._failure is not None else "stopped"
        log_event(logging.INFO, "supervisor_stopped", supervisor=self._name, state=self._state)


def check_options(specs: tuple[ChildSpec, ...], *, strategy: object, intensity: object,
                  name: object, fault_plan: object) -> None:
    """Refuse a supervisor's arguments by name (:class:`ValidationError`): run by the
    supervisor, and by :func:`supervisor_child` when called, not at each start of its child."""
    check_unique_names(specs)
    if strategy not in STRATEGIES:
        raise ValidationError("strategy", f"must be one of {', '.join(STRATEGIES)}, "
                                          f"got {strategy!r}")
    if not isinstance(intensity, Intensity):
        raise ValidationError("intensity", f"must be an Intensity, got {intensity!r}")
    if not isinstance(name, str) or not name:
        raise ValidationError("name", f"must be a non-empty string, got {name!r}")
    if fault_plan is not None and not isinstance(fault_plan, FaultPlan):
        raise ValidationError("fault_plan", f"must be a FaultPlan or None, got {fault_plan!r}")


@final
class _AfterThisTick(trio.abc.Instrument):
    """Calls ``then`` once, when the scheduling batch running now is over (trio is about to
    poll for I/O before the next), then removes itself: it marks "the same tick" exactly,
    where a task woken to do it would run among the next batch, in trio's random order."""

    def __init__(self, then: Callable[[], None]) -> None:
        self._then = then

    def before_io_wait(self, timeout: float) -> None:
        self._then()  # (should it raise, trio logs that and removes the instrument itself)
        trio.lowlevel.remove_instrument(self)


@final
class _Tick:
    """The crashes of one scheduling batch that the restart intensity decides (``endings``,
    each with whether a group restart was due as it came), and, once decided (at the batch's
    end), the ``one_for_one`` children that restart in place."""

    __slots__ = ("endings", "restart")

    def __init__(self) -> None:
        self.endings: list[tuple[ChildSlot, Ending, bool]] = []  # bool: a restart was due
        self.restart: set[ChildSlot] = set()


def _called_within(task: trio.lowlevel.Task | None) -> bool:
    """Whether the calling task is ``task`` or runs under it (in a nursery of its, at any
    depth): a child's own task, or one of its workers, or a nested supervisor's child."""
    current: trio.lowlevel.Task | None = trio.lowlevel.current_task()
    while current is not None:
        if current is task:
            return True
        nursery = current.parent_nursery
        current = None if nursery is None else nursery.parent_task
    return False
