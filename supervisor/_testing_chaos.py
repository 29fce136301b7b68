"""Seeded random fault runs over the whole runtime, with every invariant checked.

:func:`random_fault_plan` builds a plan that injects a raise or a cancel with one probability
at every seam of the runtime's actors. :func:`run_chaos` runs a workload under such a plan
(phase 1: sessions, turns, sends, routes that sometimes fail), then reopens the database with
no faults, binds the same routes, recovers and waits until nothing is left open (phase 2),
and checks the invariants (:class:`~tidings.testing.InvariantChecker`). The same seed gives the
same plan and the same workload; the interleaving may still differ (worker threads).
"""

from __future__ import annotations

import collections
import functools
import os
import random
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from tidings.actors import DeliveryHandle, Runtime, open_runtime
from tidings.errors import InjectedFault, RestartIntensityExceeded, TidingsError
from tidings.store import queries
from tidings.supervisor import FaultPlan, FaultRule, Intensity, Seam
from tidings.supervisor._testing_invariants import InvariantChecker, Violation
from tidings.supervisor._testing_route import ReconcilingMemoryRoute

__all__ = ["ACTORS", "ChaosReport", "random_fault_plan", "run_chaos"]

ACTORS = ("writer", "routes", "recovery", "tasks", "route:*")
"""The runtime's actors, as fault-plan child patterns (``route:*``: every session lane)."""

_RUNTIME_SEAMS = (Seam.BEFORE_MESSAGE, Seam.AFTER_MESSAGE, Seam.SEND, Seam.RECEIVE,
                  Seam.SHUTDOWN)
_LANE_SEAMS = (*_RUNTIME_SEAMS, Seam.CHILD_START, Seam.DELIVER)


def random_fault_plan(seed: int, rate: float, *, children: Sequence[str] = ACTORS,
                      actions: Sequence[str] = ("raise", "cancel")) -> FaultPlan:
    """A plan that, at every seam hit of the given actors, injects each action with
    probability ``rate`` (drawn from the plan's RNG, seeded with ``seed``).

    ``child_start`` and ``deliver`` are used for the lanes only: a static actor that fails
    its first start makes ``open_runtime`` fail, which is a different test.
    """
    rules = []
    for child in children:
        seams = _LANE_SEAMS if child.startswith("route") else _RUNTIME_SEAMS
        for seam in seams:
            for action in actions:
                rules.append(FaultRule(seam, child=child, action=action,  # type: ignore[arg-type]
                                       probability=rate))
    return FaultPlan(rules, seed=seed)


@attrs.define
class ChaosReport:
    """What one :func:`run_chaos` did and found."""

    seed: int
    rate: float
    sessions: int = 0
    sends: int = 0
    send_errors: collections.Counter[str] = attrs.Factory(collections.Counter)
    outcomes: collections.Counter[str] = attrs.Factory(collections.Counter)
    injected: int = 0
    restarts: int = 0
    escalations: int = 0
    stranded: int = 0
    violations: list[Violation] = attrs.Factory(list)

    def summary(self) -> str:
        outcomes = " ".join(f"{k}={v}" for k, v in sorted(self.outcomes.items()))
        errors = sum(self.send_errors.values())
        return (f"seed={self.seed} rate={self.rate} sessions={self.sessions} "
                f"sends={self.sends} send_errors={errors} injected={self.injected} "
                f"restarts={self.restarts} escalations={self.escalations} "
                f"stranded={self.stranded} {outcomes} violations={len(self.violations)}")


class _Workload:
    def __init__(self, rt: Runtime, report: ChaosReport, checker: InvariantChecker,
                 rng: random.Random, routes: dict[str, ReconcilingMemoryRoute]) -> None:
        self.rt = rt
        self.report = report
        self.checker = checker
        self.rng = rng
        self.routes = routes
        self.handles: list[DeliveryHandle] = []
        self.refused: list[str] = []  # texts whose send raised: none may be in the outbox

    def failed(self, error: BaseException) -> None:
        if isinstance(error, InjectedFault):
            self.checker.surfaced(error)
        self.report.send_errors[type(error).__name__] += 1

    async def create_sessions(self, n: int, fail_rate: float) -> None:
        for _ in range(n):
            for _attempt in range(5):
                try:
                    session_id = await self.rt.create_session(channel="chaos")
                except TidingsError as exc:
                    self.failed(exc)
                    continue
                route = ReconcilingMemoryRoute(fail=self._flaky(fail_rate))
                self.routes[session_id] = route
                self.rt.router.bind(session_id, route)
                break

    def _flaky(self, fail_rate: float) -> Any:
        rng = random.Random(self.rng.random())

        def fail(outbound: Any) -> type[BaseException] | None:
            return ConnectionError if rng.random() < fail_rate else None

        return fail

    async def session(self, session_id: str, turns: int, messages: int) -> None:
        rng = random.Random(f"{session_id}")
        for turn in range(turns):
            try:
                async with self.rt.open_turn(session_id) as ctx:
                    for n in range(messages):
                        text = f"{session_id} turn {turn} message {n}"
                        try:
                            if rng.random() < 0.2:
                                handle = await ctx.output.notice(text)
                            else:
                                handle = await ctx.output.send_text(text)
                        except TidingsError as exc:  # raised: nothing was written
                            self.failed(exc)
                            self.refused.append(text)
                            continue
                        self.report.sends += 1
                        self.handles.append(handle)
            except TidingsError as exc:
                self.failed(exc)

    async def settle(self, deadline: float) -> None:
        with trio.move_on_after(deadline):
            for handle in self.handles:
                try:
                    await handle.wait()
                except TidingsError:
                    return
        self.report.stranded = sum(h.status not in ("delivered", "failed", "unrouted", "unknown")
                                   for h in self.handles)


async def _drain(rt: Runtime, deadline: float) -> int:
    """Wait until no outbox row is ``queued`` or ``sending``; return how many still are."""
    with trio.move_on_after(deadline):
        while True:
            version = rt.bus.version
            counts = await rt.store.read(queries.count_by_status)
            open_rows = counts.get("queued", 0) + counts.get("sending", 0)
            if not open_rows:
                return 0
            await rt.bus.wait_past(version)
    counts = await rt.store.read(queries.count_by_status)
    return counts.get("queued", 0) + counts.get("sending", 0)


async def run_chaos(db_path: str | os.PathLike[str], workspace: str | os.PathLike[str], *,
                    seed: int = 0, rate: float = 0.02, sessions: int = 6, turns: int = 3,
                    messages: int = 4, plan: FaultPlan | None = None, fail_rate: float = 0.05,
                    intensity: Intensity | None = None, grace: float = 0.2,
                    settle: float = 10.0, drain: float = 30.0) -> ChaosReport:
    """Run the workload under ``plan`` (default: :func:`random_fault_plan(seed, rate)`), then
    recover with no faults and check every invariant. Returns the report; its
    ``violations`` are empty when everything held. ``settle`` and ``drain`` are watchdogs
    (seconds of trio's clock) that only a hang reaches; a run takes well under a second.
    """
    report = ChaosReport(seed=seed, rate=rate)
    plan = random_fault_plan(seed, rate) if plan is None else plan
    checker = InvariantChecker()
    rng = random.Random(seed)
    routes: dict[str, ReconcilingMemoryRoute] = {}
    workload: _Workload | None = None
    with checker.watch():
        error: BaseException | None = None
        try:
            async with open_runtime(db_path, workspace=workspace, fault_plan=plan,
                                    intensity=intensity, grace=grace) as rt:
                workload = _Workload(rt, report, checker, rng, routes)
                await workload.create_sessions(sessions, fail_rate)
                async with trio.open_nursery() as nursery:
                    for session_id in list(routes):
                        nursery.start_soon(workload.session, session_id, turns, messages)
                await workload.settle(settle)
                if rt.supervisor is not None:
                    checker.check_running(rt)
        except RestartIntensityExceeded as exc:
            error = exc
        checker.ended(error)
    report.injected = len(checker.ledger.entries)
    report.restarts = checker.ledger.restarts
    report.escalations = checker.escalations
    report.sessions = len(routes)
    # Phase 2: no faults; the same routes (the platform remembers); recover; drain.
    recovery = InvariantChecker()
    with recovery.watch():
        async with open_runtime(db_path, workspace=workspace, recover="manual",
                                grace=grace) as rt:
            for session_id, route in routes.items():
                route.fail = None
                rt.router.bind(session_id, route)
            await rt.recover()
            left = await _drain(rt, drain)
            if left:
                recovery.violations.append(Violation(
                    "liveness", f"{left} rows still queued or sending after recovery"))
            counts = await rt.store.read(queries.count_by_status)
            refused = workload.refused if workload is not None else []
            written = [text for text in refused
                       if await rt.store.read(functools.partial(_has_text, text=text))]
    report.outcomes.update({k: v for k, v in counts.items() if v})
    checker.violations += recovery.violations
    checker.violations += [Violation("half_written", f"a send that raised was written: {t!r}")
                           for t in written]
    checker.check_database(db_path)
    checker.check_routes(routes, db_path=db_path)
    report.violations = checker.violations
    return report


def _has_text(conn: Any, *, text: str) -> bool:
    return conn.execute("SELECT 1 FROM outbox WHERE text = ?", (text,)).fetchone() is not None
