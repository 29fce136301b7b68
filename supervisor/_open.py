"""``open_supervisor`` (the public way to run a supervisor) and ``supervisor_child`` (nesting)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import trio

from tidings.errors import RestartIntensityExceeded, SupervisorError
from tidings.supervisor._faults import FaultPlan
from tidings.supervisor._intensity import Intensity
from tidings.supervisor._log import describe, log_event
from tidings.supervisor._spec import (
    ChildContext,
    ChildFunction,
    ChildSpec,
    Strategy,
    child_specs,
)
from tidings.supervisor._supervisor import Supervisor, check_options

__all__ = ["open_supervisor", "supervisor_child"]


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterable[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


def _collapse(group: BaseExceptionGroup[BaseException], name: str) -> BaseException:
    """The one exception to raise instead of a group that escaped the supervisor's nursery."""
    leaves = list(_leaves(group))
    for leaf in leaves:  # KeyboardInterrupt, SystemExit, ... come first
        if not isinstance(leaf, Exception | trio.Cancelled):
            return leaf
    errors = [leaf for leaf in leaves if isinstance(leaf, Exception)]
    if not errors:
        return leaves[0]  # only Cancelled: an outer cancellation
    if len(errors) == 1:
        return errors[0]
    error = SupervisorError(f"supervisor {name!r} failed with {len(errors)} errors")
    error.__cause__ = group
    return error


def _with_body_error(failure: RestartIntensityExceeded,
                     error: Exception) -> RestartIntensityExceeded:
    """The escalation, keeping the error the body raised as it was cancelled: its
    ``__context__``, and a note, since a traceback prints the ``__cause__`` (the child's
    failure) and then no context: the body's own error was hidden."""
    failure.__context__ = error
    error_type, text = describe(error)
    failure.add_note(f"the body raised {error_type}: {text} as the supervisor gave up "
                     f"(it is this error's __context__)")
    return failure


@asynccontextmanager
async def open_supervisor(children: Iterable[ChildSpec] = (), *,
                          strategy: Strategy = "one_for_one", intensity: Intensity | None = None,
                          name: str = "supervisor", fault_plan: FaultPlan | None = None,
                          restart_log_size: int = 1000) -> AsyncIterator[Supervisor]:
    """Run a supervisor over ``children`` for the duration of the ``async with`` block.

    On entry the children start in order, each under its ``start_timeout`` and ready before
    the next starts. On exit (normal or by an exception) they stop in reverse order, each with
    the shutdown ladder. Blocks on entry until all are ready and on exit until all have ended.
    An outer cancellation that cuts the graceful stop short (or skips it) cancels the children
    instead; their mailboxes are still closed for good (blocked senders get
    MailboxClosedError, buffered messages go to the dead-letter hooks) and every child is
    reported ``stopped``.

    Raises:
      ValidationError: bad arguments (duplicate names, unknown strategy, ...).
      ChildStartError: a child failed or timed out before it was ready; the children already
        started were stopped (reverse order) first. The cause is chained.
      RestartIntensityExceeded: restarts went over ``intensity``; the body was cancelled and
        every child stopped (reverse order) first. ``__cause__`` is the last failure; an
        error the body raised as it was cancelled is its ``__context__`` (a note says so).
      The body's own exception, unwrapped (also when an outer cancellation cuts the graceful
      stop short: a real error is never lost to it). ``trio.Cancelled`` and
      ``KeyboardInterrupt`` pass through. No ``ExceptionGroup`` of the kernel's own escapes.
    """
    sup = Supervisor(children, strategy=strategy,
                     intensity=Intensity() if intensity is None else intensity, name=name,
                     fault_plan=fault_plan, restart_log_size=restart_log_size)
    failure: BaseException | None = None
    escaped: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            failure = await sup._start(nursery)
            if failure is None:
                with sup._body_scope:
                    try:
                        yield sup
                    except Exception as exc:  # noqa: BLE001 -- re-raised below, unwrapped
                        failure = exc
                        if sup._failure is not None:  # it escalated first
                            failure = _with_body_error(sup._failure, exc)
                if failure is None:
                    failure = sup._failure
            await sup._shutdown(failed=failure is not None)
    except BaseExceptionGroup as group:
        escaped = _collapse(group, name)
    finally:
        # Every child task has ended here, however the nursery exited. A cancellation of the
        # body or of the graceful stop skipped (part of) _shutdown: close what it left open.
        sup._finish(failed=failure is not None or (
            escaped is not None and not isinstance(escaped, trio.Cancelled)))
    if escaped is not None and not (failure is not None and isinstance(escaped, trio.Cancelled)):
        raise escaped
    if failure is not None:  # a real error is never lost to a cancellation of the cleanup
        raise failure


def supervisor_child(children: Iterable[ChildSpec], *, strategy: Strategy = "one_for_one",
                     intensity: Intensity | None = None, name: str | None = None,
                     fault_plan: FaultPlan | None = None) -> ChildFunction:
    """A child function that runs a nested supervisor, for ``ChildSpec(fn=...)``.

    It is ready once all its children are (``start_child`` returns the nested
    :class:`Supervisor`), so its spec's ``start_timeout`` (10 s by default) bounds the start
    of all of them together: give it room for their sum, or ``None``. It stops its children
    when the shutdown ladder closes its mailbox (give its spec ``shutdown_timeout=None`` so
    they get their own ladders), and its restart
    intensity escalation is a crash of this child in the parent. ``name`` defaults to the
    child's name, ``fault_plan`` to the parent's. Messages sent to it are dropped (logged).

    Raises:
      ValidationError: bad arguments, as :func:`open_supervisor` refuses them, now rather
        than at each start of the child.
    """
    specs = child_specs(children)
    check_options(specs, strategy=strategy,
                  intensity=Intensity() if intensity is None else intensity,
                  name="nested" if name is None else name,  # None: the child's, a name
                  fault_plan=fault_plan)

    async def run_nested_supervisor(ctx: ChildContext, *,
                                    task_status: trio.TaskStatus[Supervisor]
                                    = trio.TASK_STATUS_IGNORED) -> None:
        plan = ctx.supervisor.fault_plan if fault_plan is None else fault_plan
        async with open_supervisor(specs, strategy=strategy, intensity=intensity,
                                   name=ctx.name if name is None else name,
                                   fault_plan=plan) as sup:
            task_status.started(sup)
            async for message in ctx.mailbox:
                log_event(logging.WARNING, "message_dropped", supervisor=sup.name,
                          reason="a supervisor child takes no messages",
                          message_type=type(message).__name__)

    return run_nested_supervisor
