"""Checkpoint-level fault injection: a trio instrument that cancels an actor at step N.

:class:`CheckpointInjector` counts the scheduler steps of the task running a chosen child (the
kernel names it ``<supervisor>/<child>``; restarts in place keep the task) and, at the chosen
steps, cancels that child's *fault scope* with :meth:`Supervisor.inject_cancel`. trio delivers
the cancellation at the child's next checkpoint and the kernel turns it into an
:class:`~tidings.errors.InjectedFault` crash at the child boundary.

It never raises from a hook (an error is kept in ``errors``), and it never throws into a task:
it only cancels a scope, from ``before_task_step``, when the task is about to run and is not
parked in a trap. Count a clean run first (no ``at`` / ``every``), then sweep::

    counter = CheckpointInjector(lambda: rt.dispatcher.supervisor, "route:*")
    ...                                     # counter.steps after a clean run
    for step in range(1, counter.steps + 1):
        injector = CheckpointInjector(..., at=step)
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import trio

from tidings.errors import SupervisorError, ValidationError
from tidings.supervisor._callables import certainly_async
from tidings.supervisor._supervisor import Supervisor
from tidings.supervisor._testing_ledger import FaultLedger

__all__ = ["CheckpointInjector"]


class CheckpointInjector(trio.abc.Instrument):
    """Counts steps of the child(ren) matching ``child`` under ``supervisor``; injects a
    cancel at step ``at``, or at every ``every``-th step (at most ``times`` in all).

    ``supervisor`` is a :class:`Supervisor` or a callable returning the current one (a nested
    supervisor such as the runtime's ``routes`` is replaced when it restarts); anything else
    (``None``, ``rt.dispatcher`` for ``rt.dispatcher.supervisor``) is refused with
    :class:`ValidationError` naming ``supervisor``. ``child`` is a
    name or an :mod:`fnmatch` pattern; steps of every matching child's task are counted
    together, in scheduling order. ``ledger`` (a :class:`FaultLedger`, ``checker.ledger``;
    anything else is refused naming it) is told of every injection so the invariant checker
    can account for it.

    Read ``steps`` (counted so far), ``injected`` (``(step, child)`` pairs) and ``errors``.
    Install it with :meth:`installed` (or ``trio.lowlevel.add_instrument``).
    """

    def __init__(self, supervisor: Supervisor | Callable[[], Supervisor | None], child: str, *,
                 at: int | None = None, every: int | None = None, times: int | None = None,
                 ledger: FaultLedger | None = None) -> None:
        for field, value in (("at", at), ("every", every), ("times", times)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise ValidationError(field, f"must be an int >= 1, got {value!r}")
        if at is not None and every is not None:
            raise ValidationError("at", "give at most one of at and every")
        if not isinstance(child, str) or not child:
            raise ValidationError("child", f"must be a child name or pattern, got {child!r}")
        if ((not callable(supervisor) and not isinstance(supervisor, Supervisor))
                or certainly_async(supervisor)):  # its answer: a coroutine, at every step
            # Anything else counted no step and injected nothing, said only in ``errors``.
            raise ValidationError("supervisor", f"must be a Supervisor or a callable returning "
                                                f"the current one (def, not async def), got "
                                                f"{supervisor!r:.80}")
        if ledger is not None and not isinstance(ledger, FaultLedger):
            # At the injection its call failed (kept in ``errors``): the fault went unheard.
            raise ValidationError("ledger", f"must be a FaultLedger (checker.ledger) or None, "
                                            f"got {ledger!r:.80}")
        self._source: Callable[[], Supervisor | None] = (
            supervisor if callable(supervisor) else lambda: supervisor)
        self.child = child
        self.at = at
        self.every = every
        self.times = times
        self.ledger = ledger
        self.steps = 0
        self.injected: list[tuple[int, str]] = []
        self.errors: list[BaseException] = []
        self._matches: dict[trio.lowlevel.Task, str | None] = {}

    @contextmanager
    def installed(self) -> Iterator[CheckpointInjector]:
        """Install the instrument while inside (call from within ``trio.run``)."""
        trio.lowlevel.add_instrument(self)
        try:
            yield self
        finally:
            try:
                trio.lowlevel.remove_instrument(self)
            except KeyError:
                pass

    # --- hooks (never raise) -----------------------------------------------------------------

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        try:
            self._step(task)
        except Exception as exc:  # noqa: BLE001 - an instrument must never raise
            self.errors.append(exc)

    def task_exited(self, task: trio.lowlevel.Task) -> None:
        self._matches.pop(task, None)

    # --- internals -----------------------------------------------------------------------------

    def _child_of(self, task: trio.lowlevel.Task) -> str | None:
        try:
            return self._matches[task]
        except KeyError:
            pass
        sup = self._source()
        name: str | None = None
        if sup is not None:
            prefix = f"{sup.name}/"
            if task.name.startswith(prefix) and fnmatch.fnmatchcase(task.name[len(prefix):],
                                                                     self.child):
                name = task.name[len(prefix):]
        if name is not None:  # only cache hits: a miss may be a supervisor not yet there
            self._matches[task] = name
        return name

    def _step(self, task: trio.lowlevel.Task) -> None:
        name = self._child_of(task)
        if name is None:
            return
        self.steps += 1
        if self.times is not None and len(self.injected) >= self.times:
            return
        if self.at is not None:
            due = self.steps == self.at
        elif self.every is not None:
            due = self.steps % self.every == 0
        else:
            due = False
        if not due:
            return
        sup = self._source()
        if sup is None:
            return
        try:
            if sup.child_task(name) is not task or not sup.inject_cancel(name):
                return
        except SupervisorError:  # that child is gone
            return
        self.injected.append((self.steps, name))
        if self.ledger is not None:
            self.ledger.injected(name, None, "cancel")
