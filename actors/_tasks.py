"""Tasks owned by the runtime's supervision tree: channel turns that outlive their caller.

A channel accepts a message and returns; the turn it starts runs as a *temporary* child of the
runtime's ``tasks`` supervisor (never restarted; a failure is logged and forgotten), so no
channel needs a nursery of its own and no task outlives the runtime. At exit, :meth:`TaskRunner.
stop` stops taking tasks, lets the running ones finish for up to ``grace`` seconds, then cancels
them with the reason ``shutdown`` and waits for them to end (their own cleanup included).

A task an ``on_abandon`` starts (see :meth:`TaskRunner.start`) is never abandoned in turn by
the ``tasks`` supervisor going away (its parent restarts it after a crash): started while it
goes, or taken before and not run yet as it goes, it is kept for the next incarnation, which
runs it as it attaches; should none come before the runtime's stop, the stop runs it itself.
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
from tidings.supervisor._log import describe, field

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


@attrs.frozen
class _Kept:
    """A task taken from an ``on_abandon``, for a supervisor to come should this one not run
    it: the spec to hand the next one, and what to run should the stop have to run it
    itself."""

    spec: ChildSpec
    scope: trio.CancelScope
    async_fn: Callable[..., Awaitable[object]]
    args: tuple[Any, ...]


class TaskRunner:
    """Starts tasks under the ``tasks`` supervisor and stops them at runtime exit."""

    def __init__(self, *, grace: float) -> None:
        self.grace = grace
        self._sup: Supervisor | None = None
        self._serials = itertools.count(1)
        self._started = 0
        self._scopes: dict[str, trio.CancelScope] = {}
        self._last_words: dict[str, _Kept] = {}
        """The tasks taken from an ``on_abandon`` and not ended (in ``_scopes`` too)."""
        self._kept: dict[str, _Kept] = {}
        """Those of them the supervisor did not run as it went away: the next one is
        handed them in :meth:`attach`."""
        self._changed = trio.Event()
        """Set when every task taken has ended, or the supervisor has gone (:meth:`_settle`
        then runs the kept ones itself)."""
        self._stopping = False
        self._cancelled = False
        self._crashed = False
        self._abandoning = False
        """An ``on_abandon`` callback runs (:meth:`_exited`): a task it starts is taken, also
        once the runner is stopping."""

    # --- wiring (driven by the ``tasks`` child of open_runtime) ------------------------------

    def attach(self, supervisor: Supervisor) -> None:
        """A ``tasks`` supervisor runs (the first, or one its parent restarted): it is
        handed the tasks kept while none could start them, in the order they were taken."""
        self._sup = supervisor
        self._crashed = False
        for child, kept in list(self._kept.items()):
            try:
                supervisor.start_child_soon(kept.spec)
            except SupervisorError:  # going away already: the next one, or the stop
                return
            del self._kept[child]

    def note_crash(self) -> None:
        """The ``tasks`` supervisor's own task failed (an exception, not a cancel): called
        before it stops its tasks, so each can tell it was cut by that crash (:attr:`crashed`)
        rather than by a stop. Sync."""
        self._crashed = True

    def detach(self) -> None:
        """The ``tasks`` supervisor has ended, with every child it ran: a task it never got
        to run is forgotten too, but those kept for the next one."""
        self._sup = None
        self._scopes = {child: self._scopes[child] for child in self._kept}
        self._last_words = dict(self._kept)
        self._changed.set()

    # --- public --------------------------------------------------------------------------------

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` began: no new task is accepted."""
        return self._stopping

    @property
    def crashed(self) -> bool:
        """True from :meth:`note_crash` until the next ``tasks`` supervisor attaches: the
        tasks cancelled meanwhile were cut by its crash (its parent restarts it), not by the
        runtime's stop, nor by a cancel around the runtime (a host's), which is no crash."""
        return self._crashed

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
        cancelled the others: it is cancelled at once, as they were). So too while the
        ``tasks`` supervisor goes away (its parent restarts it): that task is kept and run by
        the next one, or, should none come before the stop, by the stop itself.

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
        if not self._abandoning:
            self.check_open()
        child = f"task:{name}:{next(self._serials)}"
        scope = trio.CancelScope()
        if self._cancelled:  # (only from an on_abandon) past the grace, as the others are
            scope.cancel(reason=SHUTDOWN_REASON)
        spec = ChildSpec(child, functools.partial(self._run, child, scope, async_fn, args),
                         restart="temporary", shutdown_timeout=0, start_timeout=None,
                         mailbox_size=0,
                         on_exit=functools.partial(self._exited, child, on_abandon))
        self._scopes[child] = scope
        if self._abandoning:
            self._last_words[child] = _Kept(spec, scope, async_fn, args)
        if self._changed.is_set():
            self._changed = trio.Event()
        try:
            if self._sup is None:
                raise SupervisorError("no tasks supervisor runs (its parent restarts it)")
            self._sup.start_child_soon(spec)
        except SupervisorError as exc:
            # The supervisor is stopping (its parent stops or restarts it) while this runner
            # is not told yet, or is gone: a task taken from an on_abandon is kept for the
            # next one (the stop runs it should none come); any other is refused.
            if not self._abandoning:
                self._finished(child)
                raise RuntimeClosedError(f"the tasks supervisor is stopping; no new turns "
                                         f"are accepted ({exc})") from exc
            self._keep(child, f"the tasks supervisor is going away ({exc})")
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
            await self._settle()
        self._cancelled = True
        if self._scopes:
            log.info("event=tasks_cancelled count=%d reason=%s", len(self._scopes),
                     SHUTDOWN_REASON)
        for scope in list(self._scopes.values()):
            scope.cancel(reason=SHUTDOWN_REASON)
        await self._settle()

    def statistics(self) -> TaskStatistics:
        return TaskStatistics(running=len(self._scopes), started=self._started,
                              stopping=self._stopping)

    def __len__(self) -> int:
        return len(self._scopes)

    async def _settle(self) -> None:
        """Return once every task taken has ended. Tasks kept for a supervisor that is not
        there (the stop came while its parent restarted it, or it will not restart it: an
        escalation) are run here, one after another, in its place."""
        while self._scopes:
            if self._sup is None and self._kept:
                child, kept = next(iter(self._kept.items()))
                del self._kept[child]
                try:
                    await self._body(child, kept.scope, kept.async_fn, kept.args)
                except Exception as exc:  # noqa: BLE001 -- as its supervisor would: logged
                    error_type, text = describe(exc)
                    log.error("event=task_failed task=%s error_type=%s error=%s",  # noqa: TRY400
                              field(child), error_type, field(text))
                continue
            if self._changed.is_set():
                self._changed = trio.Event()
            await self._changed.wait()

    # --- the child -----------------------------------------------------------------------------

    async def _run(self, child: str, scope: trio.CancelScope,
                   async_fn: Callable[..., Awaitable[object]], args: tuple[Any, ...],
                   ctx: ChildContext, *,
                   task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        await self._body(child, scope, async_fn, args)

    async def _body(self, child: str, scope: trio.CancelScope,
                    async_fn: Callable[..., Awaitable[object]], args: tuple[Any, ...]) -> None:
        try:
            with scope:
                await async_fn(*args)
        finally:
            self._finished(child)

    def _exited(self, child: str, on_abandon: Callable[[], object] | None) -> None:
        """The child's task ended (the kernel's on_exit): if its function never ran, it is
        not waited for, and whoever started it is told. Forgotten only once told: a task
        ``on_abandon`` starts (see :meth:`start`) keeps a stop waiting without a gap. Such a
        task is itself kept instead, if its supervisor is going away: it is the last word
        of a task abandoned before it (a channel's notices), and the next one runs it."""
        if child not in self._scopes:
            return  # it ran, and _run's finally has forgotten it
        if child in self._last_words and self._going_away():
            self._keep(child, "the tasks supervisor went away before it ran")
            return
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

    def _going_away(self) -> bool:
        """Whether the ``tasks`` supervisor is stopping (or gone): what it has not run, it
        never will. Sync; reads a snapshot, so only for the rare task abandoned so."""
        return self._sup is None or self._sup.statistics().state not in ("starting",
                                                                        "running")

    def _keep(self, child: str, why: str) -> None:
        """Keep *child*, a task taken from an ``on_abandon``, for the next supervisor (or the
        stop): it stays taken meanwhile."""
        self._kept[child] = self._last_words[child]
        log.info("event=task_kept task=%s reason=%s", field(child),
                 field(f"{why}: the next one runs it"))

    def _finished(self, child: str) -> None:
        self._last_words.pop(child, None)
        self._scopes.pop(child, None)
        if not self._scopes:
            self._changed.set()

