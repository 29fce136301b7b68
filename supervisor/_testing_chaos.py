"""Seeded random fault runs over the whole runtime, with every invariant checked.

:func:`random_fault_plan` builds a plan that injects a raise or a cancel with one probability
at every seam of the runtime's actors. :func:`run_chaos` runs a workload under such a plan
(phase 1: sessions, turns, sends, routes that sometimes fail; with ``chats``, also a channel
adapter whose agent streams and sometimes fails, its turns running as tasks of the runtime;
with ``acking``, some sessions bound to acking routes whose seeded clients ack late, in
batches or never before dropping), then reopens the database with no faults, binds the same
routes, recovers and waits until nothing is left open (phase 2), and checks the invariants
(:class:`~tidings.testing.InvariantChecker`, and that every lane ends idle and empty). The
same seed gives the same plan and the same workload; the interleaving may still differ
(worker threads).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import os
import random
from collections.abc import Iterable, Sequence
from typing import Any

import attrs
import trio

from tidings.actors import DeliveryHandle, Runtime, open_runtime
from tidings.actors._status import check_count, check_seconds, seconds_bound
from tidings.channels import EchoAgent
from tidings.errors import InjectedFault, RestartIntensityExceeded, TidingsError, ValidationError
from tidings.store import queries
from tidings.supervisor import FaultPlan, FaultRule, Intensity, Seam
from tidings.supervisor._testing_acking import AckingClient
from tidings.supervisor._testing_channel import MemoryChannel
from tidings.supervisor._testing_invariants import InvariantChecker, Violation, lane_violations
from tidings.supervisor._testing_route import ReconcilingMemoryRoute

__all__ = ["ACTORS", "ChaosReport", "check_new_db_path", "random_fault_plan", "run_chaos",
           "settled_lanes"]

ACTORS = ("writer", "routes", "recovery", "tasks", "route:*", "task:*")
"""The runtime's actors, as fault-plan child patterns (``route:*``: every session lane;
``task:*``: every channel turn)."""

_RUNTIME_SEAMS = (Seam.BEFORE_MESSAGE, Seam.AFTER_MESSAGE, Seam.SEND, Seam.RECEIVE,
                  Seam.SHUTDOWN)
_LANE_SEAMS = (*_RUNTIME_SEAMS, Seam.CHILD_START, Seam.DELIVER)
_TASK_SEAMS = (Seam.CHILD_START, Seam.SHUTDOWN)  # a turn task has no mailbox


def check_new_db_path(db_path: str | os.PathLike[str]) -> None:
    """A run's database is its own: the checks read all of it, so the rows of another run in
    it (a loop over seeds reusing one path) would be counted as this run's violations."""
    if os.path.lexists(db_path):
        raise ValidationError("db_path", f"must be a path where nothing is yet (a fresh "
                                         f"database for this run), got {os.fspath(db_path)!r}")


def _check_seed(seed: object) -> None:
    """A seed is an int: ``None`` would seed every RNG from the OS, and nothing replays."""
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValidationError("seed", f"must be an int (to replay), got {seed!r:.80}")


def _check_share(field: str, value: object) -> None:
    """A probability or share: a number in [0, 1] (NaN refused: no comparison holds)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise ValidationError(field, f"must be in [0, 1], got {value!r:.80}")


def _check_names(field: str, names: object) -> tuple[str, ...]:
    """Names, each a non-empty string (as a tuple): a lone string would be taken letter by
    letter (the child ``'*'`` of ``'route:*'`` matches every actor)."""
    found = (tuple(names) if isinstance(names, Iterable) and not isinstance(names, str | bytes)
             else None)
    if not found or not all(isinstance(name, str) and name for name in found):
        raise ValidationError(field, f"must be a non-empty collection of non-empty strings "
                                     f"(not a lone string), got {names!r:.80}")
    return found


def random_fault_plan(seed: int, rate: float, *, children: Sequence[str] = ACTORS,
                      actions: Sequence[str] = ("raise", "cancel")) -> FaultPlan:
    """A plan that, at every seam hit of the given actors, injects each action with
    probability ``rate`` (drawn from the plan's RNG, seeded with ``seed``).

    ``child_start`` and ``deliver`` are used for the lanes only: a static actor that fails
    its first start makes ``open_runtime`` fail, which is a different test. ``seed`` must be
    an int, ``rate`` in [0, 1], ``children`` a non-empty collection of non-empty strings, not
    a lone string, and ``actions`` a non-empty collection of ``"raise"`` and ``"cancel"`` (a
    :class:`ValidationError` naming them; ``rate=0`` is a plan that injects nothing).
    """
    _check_seed(seed)
    _check_share("rate", rate)
    children = _check_names("children", children)
    actions = _check_names("actions", actions)
    for action in actions:  # else FaultRule refused it as 'action', no option of this one
        if action not in ("raise", "cancel"):
            raise ValidationError("actions", f"must hold 'raise' and/or 'cancel', got "
                                             f"{action!r:.80}")
    rules = []
    for child in children:
        seams = (_LANE_SEAMS if child.startswith("route:")
                 else _TASK_SEAMS if child.startswith("task:") else _RUNTIME_SEAMS)
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
    inbound: int = 0
    turns: collections.Counter[str] = attrs.Factory(collections.Counter)
    send_errors: collections.Counter[str] = attrs.Factory(collections.Counter)
    outcomes: collections.Counter[str] = attrs.Factory(collections.Counter)
    injected: int = 0
    restarts: int = 0
    escalations: int = 0
    stranded: int = 0
    acking: int = 0
    """Sessions bound to an acking route (``ack_window``)."""
    lane_bytes: int | None = None
    """The dispatcher's per-lane budget, if not the default."""
    acks: int = 0
    drops: int = 0
    violations: list[Violation] = attrs.Factory(list)

    def summary(self) -> str:
        """One line of the run's numbers (seed, rate, sends, outcomes, faults, ...), to log or
        to put in an assertion message; the seed replays the run."""
        outcomes = " ".join(f"{k}={v}" for k, v in sorted(self.outcomes.items()))
        errors = sum(self.send_errors.values())
        turns = " ".join(f"turns_{k}={v}" for k, v in sorted(self.turns.items()))
        acking = (f"acking={self.acking} lane_bytes={self.lane_bytes} acks={self.acks} "
                  f"drops={self.drops} " if self.acking else "")
        return (f"seed={self.seed} rate={self.rate} sessions={self.sessions} {acking}"
                f"sends={self.sends} inbound={self.inbound} {turns} "
                f"send_errors={errors} injected={self.injected} "
                f"restarts={self.restarts} escalations={self.escalations} "
                f"stranded={self.stranded} {outcomes} violations={len(self.violations)}")


class _Workload:
    def __init__(self, rt: Runtime, report: ChaosReport, checker: InvariantChecker,
                 rng: random.Random, routes: dict[str, ReconcilingMemoryRoute], *,
                 acking: float = 0.0) -> None:
        self.rt = rt
        self.report = report
        self.checker = checker
        self.rng = rng
        self.routes = routes
        self.acking = acking
        # Its own RNG: the plan's and the workload's draws are those of a run without it.
        self.acks = random.Random(f"acking {report.seed}")
        self.clients: list[AckingClient] = []
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
                window = (self.acks.randint(1, 3)
                          if self.acking and self.acks.random() < self.acking else None)
                route = ReconcilingMemoryRoute(fail=self.flaky(fail_rate), ack_window=window)
                self.routes[session_id] = route
                self.rt.router.bind(session_id, route)
                break

    def flaky(self, fail_rate: float) -> Any:
        rng = random.Random(self.rng.random())

        def fail(outbound: Any) -> type[BaseException] | None:
            return ConnectionError if rng.random() < fail_rate else None

        return fail

    def start_clients(self, nursery: trio.Nursery, rt: Runtime, *, final: bool) -> None:
        """A seeded client for each acking route (see :class:`AckingClient`); without
        ``final`` (phase 2) one that acks all it is given, late or not, and never drops."""
        for session_id, route in self.routes.items():
            if getattr(route, "ack_window", None):
                client = AckingClient(rt, session_id, route, random.Random(self.acks.random()),
                                      self.failed, final=final, dropping=final)
                self.clients.append(client)
                nursery.start_soon(client.run)

    def stop_clients(self) -> None:
        for client in self.clients:
            client.stop()

    def count_clients(self) -> None:
        self.report.acks += sum(client.acked for client in self.clients)
        self.report.drops += sum(client.drops for client in self.clients)
        self.clients = []

    async def session(self, session_id: str, index: int, turns: int, messages: int) -> None:
        # Seeded by the run's seed and the session's place, not its id (new in every run).
        rng = random.Random(f"session {self.report.seed} {index}")
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


@attrs.define
class _SessionView:
    """What one session's share of a channel's platform saw (for the route checks)."""

    attempted: list[Any] = attrs.Factory(list)
    delivered: list[Any] = attrs.Factory(list)


class FlakyAgent:
    """An echo agent that streams its reply in small chunks and fails a turn with
    probability ``fail_rate``: one draw per turn, seeded with ``seed`` and the turn's text (the
    chats run at once, in an order trio varies, so one RNG for all would not replay)."""

    def __init__(self, seed: object, fail_rate: float) -> None:
        self.echo = EchoAgent(chunk_size=8)
        self.seed = seed
        self.fail_rate = fail_rate

    async def run(self, turn: Any) -> None:
        if random.Random(f"agent {self.seed} {turn.text}").random() < self.fail_rate:
            await trio.lowlevel.checkpoint()
            raise RuntimeError("the agent failed on purpose")
        await self.echo.run(turn)


async def _chat(channel: MemoryChannel, workload: _Workload, chat: int, messages: int) -> None:
    for n in range(messages):
        try:
            await channel.say(f"chat {chat} says {n}", chat_id=f"chat-{chat}",
                              message_id=f"{chat}-{n}")
            workload.report.inbound += 1
        except TidingsError as exc:  # the runtime is failing or stopping: nothing accepted
            workload.failed(exc)


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
                    messages: int = 4, chats: int = 3, chat_messages: int = 3,
                    plan: FaultPlan | None = None, fail_rate: float = 0.05,
                    intensity: Intensity | None = None, grace: float = 0.2,
                    settle: float = 10.0, drain: float = 30.0, acking: float = 0.0,
                    lane_bytes: int | None = None) -> ChaosReport:
    """Run the workload under ``plan`` (default: :func:`random_fault_plan(seed, rate)`), then
    recover with no faults and check every invariant. A plan given is copied for the run (its
    rules and seed, no hits), so one plan serves a loop of runs and is itself left as it was.
    Returns the report; its ``violations`` are empty when everything held. ``sessions`` x
    ``turns`` x ``messages`` sends go straight through the output SDK; ``chats`` x
    ``chat_messages`` messages go through a :class:`MemoryChannel` (steer mode: a message
    cancels the turn before it).
    ``settle`` and ``drain`` are watchdogs (seconds of trio's clock) that only a hang
    reaches; a run takes well under a second.

    ``acking`` (default 0: none) is the share of the sessions bound to an acking route
    (``ack_window`` 1 to 3), each with an :class:`AckingClient` (in phase 1 it may end by
    acking, dropping or just going; in phase 2 it acks all it is given, never dropping, so
    every row delivered then ends ``sent``). Those draws come from an RNG of their own seeded
    from ``seed``, so the plan and the rest of the workload are those of the same seed
    without it. ``lane_bytes`` sets the dispatcher's per-lane budget in both phases; left
    ``None`` in a run with ``acking``, the seeded RNG picks the default, 120 or 1 byte (one
    unacked row at a time), so the acking lanes' byte wait is exercised. Phase 2 also checks
    that every lane ends idle and empty (:func:`~tidings.testing.lane_violations`).

    Bad options raise :class:`ValidationError` naming them before anything is created: ``seed``
    an int, ``rate``, ``fail_rate`` and ``acking`` in [0, 1], the counts ints >= 0,
    ``lane_bytes`` ``None`` or an int >= 0, ``settle`` and ``drain`` seconds >= 0, ``plan``
    ``None`` or a :class:`FaultPlan`, and
    ``db_path`` a path where nothing is yet (the checks read the whole database: an earlier
    run's rows would be held against this one).
    """
    check_new_db_path(db_path)
    _check_seed(seed)
    for field, share in (("rate", rate), ("fail_rate", fail_rate), ("acking", acking)):
        _check_share(field, share)
    for field, count in (("sessions", sessions), ("turns", turns), ("messages", messages),
                         ("chats", chats), ("chat_messages", chat_messages)):
        check_count(field, count)
    if lane_bytes is not None:
        check_count("lane_bytes", lane_bytes)
    if plan is not None and not isinstance(plan, FaultPlan):  # (not open_runtime's fault_plan)
        raise ValidationError("plan", f"must be a FaultPlan or None, got {plan!r:.80}")
    check_seconds("settle", settle)
    check_seconds("drain", drain)
    settle, drain = seconds_bound(settle), seconds_bound(drain)  # 10**400: no bound, as inf
    report = ChaosReport(seed=seed, rate=rate)
    # A plan given is a template: this run gets its rules and seed with no hits yet, so a loop
    # over seeds reusing one plan does not use it up (a times=1 rule fired in the first run).
    plan = random_fault_plan(seed, rate) if plan is None else FaultPlan(plan.rules, plan.seed)
    checker = InvariantChecker()
    rng = random.Random(seed)
    routes: dict[str, ReconcilingMemoryRoute] = {}
    workload: _Workload | None = None
    channel: MemoryChannel | None = None
    with checker.watch():
        error: BaseException | None = None
        try:
            async with open_runtime(db_path, workspace=workspace, fault_plan=plan,
                                    intensity=intensity, grace=grace) as rt:
                workload = _Workload(rt, report, checker, rng, routes, acking=acking)
                if lane_bytes is None and acking:
                    lane_bytes = workload.acks.choice((None, 120, 1))
                report.lane_bytes = lane_bytes
                if lane_bytes is not None:
                    rt.dispatcher.lane_bytes = lane_bytes
                channel = MemoryChannel(rt, agent=FlakyAgent(seed, fail_rate))
                channel.platform = ReconcilingMemoryRoute(fail=workload.flaky(fail_rate))
                await workload.create_sessions(sessions, fail_rate)
                async with _clients(workload, rt, final=True):
                    async with trio.open_nursery() as nursery:
                        for index, session_id in enumerate(list(routes)):
                            nursery.start_soon(workload.session, session_id, index, turns,
                                               messages)
                        for chat in range(chats):
                            nursery.start_soon(_chat, channel, workload, chat, chat_messages)
                    with trio.move_on_after(settle):
                        await channel.wait_idle()
                    await workload.settle(settle)
                    if rt.supervisor is not None:
                        checker.check_running(rt)
        except RestartIntensityExceeded as exc:
            error = exc
        checker.ended(error)
    chat_sessions: list[str] = []
    if channel is not None:
        checker.check_lifecycles(channel.events)
        report.turns.update(event.type for event in channel.events if event.terminal)
        chat_sessions = channel.directory.sessions()
    report.injected = len(checker.ledger.entries)
    report.restarts = checker.ledger.restarts
    report.escalations = checker.escalations
    report.sessions = len(routes) + len(chat_sessions)
    report.acking = sum(bool(getattr(route, "ack_window", None)) for route in routes.values())
    # Phase 2: no faults; the same routes (the platform remembers); recover; drain.
    recovery = InvariantChecker()
    with recovery.watch():
        async with open_runtime(db_path, workspace=workspace, recover="manual",
                                grace=grace) as rt:
            if lane_bytes is not None:
                rt.dispatcher.lane_bytes = lane_bytes
            for session_id, route in routes.items():
                route.fail = None
                rt.router.bind(session_id, route)
            if channel is not None:  # its platform remembers what it was sent
                channel.platform.fail = None
                for session_id in chat_sessions:
                    rt.router.bind(session_id, channel.platform)
            async with _clients(workload, rt, final=False):
                await rt.recover()
                left = await _drain(rt, drain)
            if left:
                recovery.violations.append(Violation(
                    "liveness", f"{left} rows still queued or sending after recovery"))
            recovery.violations += await settled_lanes(rt)
            counts = await rt.store.read(queries.count_by_status)
            refused = workload.refused if workload is not None else []
            written = [text for text in refused
                       if await rt.store.read(functools.partial(_has_text, text=text))]
    report.outcomes.update({k: v for k, v in counts.items() if v})
    checker.violations += recovery.violations
    checker.violations += [Violation("half_written", f"a send that raised was written: {t!r}")
                           for t in written]
    checker.check_database(db_path)
    seen: dict[str, Any] = dict(routes)
    if channel is not None:  # the channel's platform, split by session
        views = {session_id: _SessionView() for session_id in chat_sessions}
        for outbound in channel.platform.attempted:
            if outbound.session_id is not None:
                views.setdefault(outbound.session_id, _SessionView()).attempted.append(outbound)
        for outbound in channel.platform.delivered:
            if outbound.session_id is not None:
                views.setdefault(outbound.session_id, _SessionView()).delivered.append(outbound)
        seen.update(views)
    checker.check_routes(seen, db_path=db_path)
    report.violations = checker.violations
    return report


async def settled_lanes(rt: Runtime, rounds: int = 20) -> list[Violation]:
    """:func:`lane_violations` once the lanes have taken in the last commits: rows read back
    terminal may be so before the writer's task has run their lanes' callbacks (a lane's
    flush in the background), so each round waits for an empty write (after every earlier
    one, callbacks included), for the reads in flight (a lane's last refill, which finds
    nothing and ends its overflow: a task waiting for a read in a thread looks blocked, and
    a slow reader thread left lanes reported overflowing), and then for every task to
    block. A lane still busy after ``rounds`` is reported."""
    from trio.testing import wait_all_tasks_blocked  # (not at import time)

    for _ in range(rounds):
        await rt.store.commit([])
        await rt.store.readers.wait_idle()
        await wait_all_tasks_blocked()
        found = lane_violations(rt)
        if not found:
            break
    return found


@contextlib.asynccontextmanager
async def _clients(workload: _Workload | None, rt: Runtime, *, final: bool) -> Any:
    """Run the acking routes' clients while inside, and stop them on leaving (no nursery,
    so nothing changes, in a run with none)."""
    if workload is None or not any(getattr(route, "ack_window", None)
                                   for route in workload.routes.values()):
        yield
        return
    async with trio.open_nursery() as nursery:
        workload.start_clients(nursery, rt, final=final)
        try:
            yield
        finally:
            workload.stop_clients()
    workload.count_clients()


def _has_text(conn: Any, *, text: str) -> bool:
    return conn.execute("SELECT 1 FROM outbox WHERE text = ?", (text,)).fetchone() is not None
