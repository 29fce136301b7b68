"""Tasks owned by the runtime's supervision tree: channel turns that outlive their caller.

A channel accepts a message and returns; the turn it starts runs as a *temporary* child of the
runtime's ``tasks`` supervisor (never restarted; a failure is logged and forgotten), so no
channel needs a nursery of its own and no task outlives the runtime. At exit, :meth:`TaskRunner.
stop` stops taking tasks, lets the running ones finish for up to ``grace`` seconds, then cancels
them with the reason ``shutdown`` and waits for them to end (their own cleanup included).
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from tidings.actors._status import check_id
from tidings.errors import RuntimeClosedError, SupervisorError, ValidationError
from tidings.supervisor import ChildContext, ChildSpec, Supervisor
from tidings.supervisor._callables import certainly_sync
from tidings.supervisor._log import field

__all__ = ["SHUTDOWN_REASON", "TaskRunner", "TaskStatistics"]

log = logging.getLogger("tidings.tasks")

SHUTDOWN_REASON = "shutdown"
"""The trio cancel reason of tasks still running when the grace period ends."""


@attrs.frozen
class TaskStatistics:
    """A snapshot: tasks running now, started so far, and whether the runner is stopping."""

    running: int
    started: int
    stopping: bool


class TaskRunner:
    """Starts tasks under the ``tasks`` supervisor and stops them at runtime exit."""

    def __init__(self, *, grace: float) -> None:
        self.grace = grace
        self._sup: Supervisor | None = None
        self._serials = itertools.count(1)
        self._started = 0
        self._scopes: dict[str, trio.CancelScope] = {}
        self._idle = trio.Event()
        self._idle.set()
        self._stopping = False
        self._cancelled = False
        self._abandoning = False
        """An ``on_abandon`` callback runs (:meth:`_exited`): a task it starts is taken, also
        once the runner is stopping."""

    # --- wiring (driven by the ``tasks`` child of open_runtime) ------------------------------

    def attach(self, supervisor: Supervisor) -> None:
        self._sup = supervisor

    def detach(self) -> None:
        """The ``tasks`` supervisor has ended, with every child it ran: a task it never got
        to run is forgotten too."""
        self._sup = None
        self._scopes.clear()
        self._idle.set()

    # --- public --------------------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` began: no new task is accepted."""
        return self._stopping

    @property
    def cancelled(self) -> bool:
        """True once :meth:`stop` has cancelled the tasks still running after the grace
        (reason ``shutdown``). A task in a shielded section (an agent's cleanup) sees no
        ``Cancelled``: this says it was cut all the same."""
        return self._cancelled

    def check_open(self) -> None:
        """Raise :class:`RuntimeClosedError` unless a new task would be accepted now."""
        if self._stopping or self._sup is None:
            raise RuntimeClosedError("the runtime is stopping; no new turns are accepted")

    def start(self, name: str, async_fn: Callable[..., Awaitable[object]], *args: Any,
              on_abandon: Callable[[], object] | None = None) -> str:
        """Run ``async_fn(*args)`` as a temporary child; return the child's unique name.

        Never blocks. The task is never restarted; an exception it raises is logged by the
        supervisor and forgotten (so a task should handle its own errors). If the task ends
        without ever calling ``async_fn`` (it failed at child start), ``on_abandon()`` is
        called instead (sync), so the caller can undo what it set up for it. It may start a
        task for what it cannot do sync (a channel's worker: its waiting turns' notices and
        ends), even while the runner stops: the task it was to run had been taken before the
        stop, so the stop waits for that one in its place (no grace once the stop has
        cancelled the others: it is cancelled at once, as they were).

        Raises:
          ValidationError: ``name`` is not an id (see ``check_id``: it is in every log line
            about the task), ``async_fn`` not callable or certainly a plain (sync) function,
            or ``on_abandon`` neither None nor callable; nothing is started.
          RuntimeClosedError: the runtime is stopping (or the supervisor is restarting).
        """
        check_id("name", name)
        if not callable(async_fn) or certainly_sync(async_fn):
            raise ValidationError("async_fn", f"must be an async function (async def), got "
                                              f"{async_fn!r:.80}")
        if on_abandon is not None and not callable(on_abandon):
            raise ValidationError("on_abandon", f"must be None or callable, got "
                                                f"{on_abandon!r:.80}")
        if not (self._abandoning and self._sup is not None):
            self.check_open()
        assert self._sup is not None
        child = f"task:{name}:{next(self._serials)}"
        scope = trio.CancelScope()
        if self._cancelled:  # (only from an on_abandon) past the grace, as the others are
            scope.cancel(reason=SHUTDOWN_REASON)
        spec = ChildSpec(child, functools.partial(self._run, child, scope, async_fn, args),
                         restart="temporary", shutdown_timeout=0, start_timeout=None,
                         mailbox_size=0,
                         on_exit=functools.partial(self._exited, child, on_abandon))
        self._scopes[child] = scope
        if self._idle.is_set():
            self._idle = trio.Event()
        try:
            self._sup.start_child_soon(spec)
        except SupervisorError as exc:  # the supervisor is stopping (its parent stops or
            self._finished(child)       # restarts it) while this runner is not told yet
            raise RuntimeClosedError(f"the tasks supervisor is stopping; no new turns are "
                                     f"accepted ({exc})") from exc
        except BaseException:
            self._finished(child)
            raise
        self._started += 1
        return child

    async def stop(self) -> None:
        """Stop taking tasks; give running ones ``grace`` seconds, then cancel them (reason
        ``shutdown``) and wait until every one has ended. Always a checkpoint."""
        self._stopping = True
        with trio.move_on_after(self.grace):
            await self._idle.wait()
        self._cancelled = True
        if self._scopes:
            log.info("event=tasks_cancelled count=%d reason=%s", len(self._scopes),
                     SHUTDOWN_REASON)
        for scope in list(self._scopes.values()):
            scope.cancel(reason=SHUTDOWN_REASON)
        await self._idle.wait()

    def statistics(self) -> TaskStatistics:
        return TaskStatistics(running=len(self._scopes), started=self._started,
                              stopping=self._stopping)

    def __len__(self) -> int:
        return len(self._scopes)

    # --- the child -----------------------------------------------------------------------------

    async def _run(self, child: str, scope: trio.CancelScope,
                   async_fn: Callable[..., Awaitable[object]], args: tuple[Any, ...],
                   ctx: ChildContext, *,
                   task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            with scope:
                await async_fn(*args)
        finally:
            self._finished(child)

    def _exited(self, child: str, on_abandon: Callable[[], object] | None) -> None:
        """The child's task ended (the kernel's on_exit): if its function never ran, it is
        not waited for, and whoever started it is told. Forgotten only once told: a task
        ``on_abandon`` starts (see :meth:`start`) keeps a stop waiting without a gap."""
        if child not in self._scopes:
            return  # it ran, and _run's finally has forgotten it
        log.warning("event=task_abandoned task=%s reason=\"ended before it ran\"", field(child))
        try:
            if on_abandon is not None:
                self._abandoning = True
                try:
                    on_abandon()
                finally:
                    self._abandoning = False
        finally:
            self._finished(child)

    def _finished(self, child: str) -> None:
        self._scopes.pop(child, None)
        if not self._scopes:
            self._idle.set()

