"""Systematic sweeps: one delivery path, a cancel injected at each scheduler step in turn.

:func:`delivery_path_run` runs one fixed delivery path (a session, its route stalled while the
first of ``messages`` sends is delivered, the others queued behind it, then released), with a
:class:`CheckpointInjector` on one actor (``at=None``: count only). It waits for every handle,
reopens the database without faults to recover, and checks every invariant: the lanes
(:func:`lane_violations`) once every delivery ended in the faulty runtime and again after the
recovery, then the database and the route.
:func:`sweep_delivery_path` counts the steps of a clean run, then runs once per step (or per
``every``-th step).
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Callable

import attrs
import trio

from tidings.actors import Runtime, open_runtime
from tidings.actors._status import check_count, check_seconds, seconds_bound
from tidings.errors import TidingsError, ValidationError
from tidings.supervisor import Supervisor
from tidings.supervisor._testing_chaos import check_new_db_path, settled_lanes
from tidings.supervisor._testing_instrument import CheckpointInjector
from tidings.supervisor._testing_invariants import InvariantChecker, Violation
from tidings.supervisor._testing_route import ReconcilingMemoryRoute

__all__ = ["SweepRun", "delivery_path_run", "sweep_delivery_path"]


@attrs.frozen
class SweepRun:
    """One run of the path: the step it injected at (``None``: a counting run), the steps it
    counted, the injections made, how each delivery ended, and what broke."""

    at: int | None
    steps: int
    injected: tuple[tuple[int, str], ...]
    outcomes: tuple[str, ...]
    violations: tuple[Violation, ...]


def _check_target(target: object) -> None:
    """A child name or pattern, checked before the clean run opens its runtime (the injector,
    inside it, named it ``child``, and that run's database was left in the directory)."""
    if not isinstance(target, str) or not target:
        raise ValidationError("target", f"must be a child name or pattern, got {target!r:.80}")


def _supervisor_of(rt: Runtime, target: str) -> Callable[[], Supervisor | None]:
    if target.startswith("route"):
        return lambda: rt.dispatcher.supervisor
    return lambda: rt.supervisor


async def delivery_path_run(db_path: str | os.PathLike[str],
                            workspace: str | os.PathLike[str], *,
                            target: str = "route:*", at: int | None = None, messages: int = 3,
                            watchdog: float = 20.0) -> SweepRun:
    """Run the path once with a cancel at step ``at`` of ``target`` (a child name or pattern:
    ``route:*`` is the session's lane, ``writer`` / ``recovery`` are root children).

    ``db_path`` must be a path where nothing is yet (:class:`ValidationError` naming it): the
    checks read the whole database, so an earlier run's rows would be held against this one.
    ``target`` must be a non-empty string, ``at`` ``None`` or an int >= 1, ``messages`` an
    int >= 1 and ``watchdog`` seconds >= 0 (the bound of each wait),
    else a :class:`ValidationError` naming them, before anything is opened."""
    check_new_db_path(db_path)
    _check_target(target)
    # At least one message: with none there is no delivery to sweep (the sweep then blamed
    # its target, or swept the writer over nothing and passed).
    check_count("messages", messages, least=1)
    if at is not None:  # (the injector refuses it too, but in the open runtime: its database made)
        check_count("at", at, least=1)
    check_seconds("watchdog", watchdog)
    watchdog = seconds_bound(watchdog)  # an int no float holds: no bound, as inf
    checker = InvariantChecker()
    route = ReconcilingMemoryRoute()
    route.stall()
    outcomes: list[str] = []
    session_id = ""
    with checker.watch():
        async with open_runtime(db_path, workspace=workspace, grace=0.5) as rt:
            injector = CheckpointInjector(_supervisor_of(rt, target), target, at=at,
                                          ledger=checker.ledger)
            with injector.installed():
                for _ in range(5):
                    try:
                        session_id = await rt.create_session(channel="sweep")
                        break
                    except TidingsError as exc:
                        checker.surfaced(exc)
                rt.router.bind(session_id, route)
                handles = []
                try:
                    async with rt.open_turn(session_id) as ctx:
                        for n in range(messages):
                            try:
                                handles.append(await ctx.output.send_text(f"m{n}"))
                            except TidingsError as exc:  # nothing was written
                                checker.surfaced(exc)
                            if n == 0 and handles:
                                with trio.move_on_after(watchdog):
                                    await route.wait_attempted(1)
                except TidingsError as exc:
                    checker.surfaced(exc)
                route.release()
                with trio.move_on_after(watchdog) as waited:
                    for handle in handles:
                        try:
                            outcomes.append(await handle.wait())
                        except TidingsError as exc:
                            outcomes.append(type(exc).__name__)
                if waited.cancelled_caught:
                    checker.violations.append(Violation(
                        "liveness", f"deliveries never ended: {[h.status for h in handles]}"))
                checker.check_running(rt)
            # Every row terminal (and acked: the route has no window), the injector out (its
            # steps count the path alone, and no cancel lands in the check's own writes).
            if not waited.cancelled_caught:
                checker.violations += await settled_lanes(rt)
    async with open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        if session_id:
            rt.router.bind(session_id, route)
        await rt.recover()
        checker.violations += await settled_lanes(rt)
    checker.check_database(db_path)
    checker.check_routes({session_id: route} if session_id else {}, db_path=db_path)
    return SweepRun(at, injector.steps, tuple(injector.injected), tuple(outcomes),
                    tuple(checker.violations))


async def sweep_delivery_path(directory: str | os.PathLike[str],
                              workspace: str | os.PathLike[str], *,
                              target: str = "route:*", every: int = 1,
                              messages: int = 3) -> list[SweepRun]:
    """Count the steps of a clean run of the path, then run it once per ``every``-th step
    with a cancel there. Returns every run, the counting run first; a broken invariant is
    raised by none: it is in its run's ``violations`` (a test asserts they are empty).

    Raises :class:`ValidationError` naming the option, before any run, unless ``every`` is
    an int >= 1 (a step of 0 or less would sweep nothing and pass), ``messages`` an int >= 1
    (with none, no delivery is swept) and ``target`` a non-empty string; and (field
    ``target``) after the clean run when no task of ``target`` ran a step in it (a name that
    matches no actor of the path, or one that stays idle on it): there is nothing to sweep.
    It refuses (field ``directory``), before any run, a directory that already holds a run's
    database (``clean.db``, ``at-<step>.db``: an earlier sweep's), whose rows the checks
    would hold against this sweep."""
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise ValidationError("every", f"must be an int >= 1, got {every!r}")
    _check_target(target)
    check_count("messages", messages, least=1)
    directory = pathlib.Path(directory)
    workspace = pathlib.Path(workspace)
    earlier = sorted(path.name for pattern in ("clean.db*", "at-*.db*")
                     for path in directory.glob(pattern))
    if earlier:
        raise ValidationError("directory", f"must hold no run's database yet (an earlier "
                                           f"sweep's?), has {', '.join(earlier[:5])}")
    clean = await delivery_path_run(directory / "clean.db", workspace, target=target,
                                    messages=messages)
    if not clean.steps:
        raise ValidationError("target", f"no task of {target!r} ran a step in a clean run of "
                                        f"the path: nothing to sweep")
    runs = [clean]
    for step in range(every, clean.steps + 1, every):
        runs.append(await delivery_path_run(directory / f"at-{step}.db", workspace,
                                            target=target, at=step, messages=messages))
    return runs
