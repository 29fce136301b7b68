"""The invariant checker: what must hold after every injected fault and at the end of a run.

Each check returns a list of :class:`Violation` (empty: it holds); :class:`InvariantChecker`
gathers them over a run and :meth:`InvariantChecker.assert_ok` raises one
:class:`InvariantViolation` that lists them all. The checks read only what a user can see:
the database (read-only, after the runtime has stopped), what routes were handed, the task
tree, live memory channels, and the supervision kernel's log (``tidings.supervisor``).
"""

from __future__ import annotations

import errno
import itertools
import os
import pathlib
import sqlite3
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs

from tidings.errors import InvariantViolation, RestartIntensityExceeded, ValidationError
from tidings.store import TERMINAL_STATUSES
from tidings.supervisor._testing_census import ChannelCensus, TaskCensus
from tidings.supervisor._testing_ledger import FaultLedger
from tidings.supervisor._testing_route import MemoryRoute

__all__ = ["InvariantChecker", "InvariantViolation", "Violation", "database_violations",
           "escalation_violations", "lane_violations", "lifecycle_violations",
           "route_violations"]

# outbox status -> the work item status that goes with it
_WORK_STATUS = {"queued": "pending", "sending": "claimed", "sent": "completed",
                "failed": "failed", "unknown": "abandoned", "unrouted": "unrouted"}


@attrs.frozen
class Violation:
    """One broken invariant: which (a short name) and what exactly."""

    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.detail}"


# --- the database ------------------------------------------------------------------------------


def _read_only(db_path: Any) -> sqlite3.Connection:
    """*db_path* opened read-only, by a URI built from the path (as the store does): a ``#``,
    ``?`` or ``%`` in it, which a path may hold, is then part of the path. A path that is no
    file raises :class:`FileNotFoundError` naming it (SQLite says only 'unable to open
    database file')."""
    if not pathlib.Path(db_path).is_file():
        raise FileNotFoundError(errno.ENOENT, "no database file there", os.fspath(db_path))
    return sqlite3.connect(f"{pathlib.Path(db_path).resolve().as_uri()}?mode=ro", uri=True)


def database_violations(db_path: Any, *, allow_open: bool = False,
                        check_turns: bool = True) -> list[Violation]:
    """What the database says about the durable state machines (read-only; run it while no
    runtime writes, e.g. after the runtime stopped and recovery ran).

    * every delivery intent is terminal (``sent``, ``failed``, ``unknown``, ``unrouted``);
      with ``allow_open`` ``queued`` / ``sending`` rows pass (a live actor still owns them);
    * its ``delivery.send`` work item agrees with it, and its history row exists when it
      names one (one transaction wrote them);
    * its events: exactly one ``delivery.queued``, at most one ``delivery.sent``, and the
      event of its final status;
    * per-session ``seq`` runs 1, 2, 3, ... with no gap or repeat (in a database a prune has
      trimmed, :func:`pruned`, gaps are the deliveries it deleted: only increasing, no repeat);
    * with ``check_turns``, no turn is left ``running``.
    """
    conn = _read_only(db_path)
    try:
        return _database_violations(conn, allow_open=allow_open, check_turns=check_turns)
    finally:
        conn.close()


def _database_violations(conn: sqlite3.Connection, *, allow_open: bool,
                         check_turns: bool) -> list[Violation]:
    found: list[Violation] = []
    rows = conn.execute(
        "SELECT o.delivery_id, o.session_id, o.seq, o.status, o.history_message_id, "
        "w.status, w.kind, m.message_id FROM outbox o "
        "LEFT JOIN work_items w ON w.work_id = o.work_id "
        "LEFT JOIN messages m ON m.message_id = o.history_message_id "
        "ORDER BY o.session_id, o.seq").fetchall()
    events: dict[str, Counter[str]] = {}
    for delivery_id, kind in conn.execute(
            "SELECT delivery_id, type FROM events WHERE delivery_id IS NOT NULL"):
        events.setdefault(delivery_id, Counter())[kind] += 1
    seqs: dict[str, list[int]] = {}
    for delivery_id, session_id, seq, status, history_id, work, work_kind, message in rows:
        seqs.setdefault(session_id, []).append(seq)
        if status not in TERMINAL_STATUSES and not (allow_open and status in ("queued",
                                                                             "sending")):
            found.append(Violation("terminal", f"delivery {delivery_id} of {session_id} "
                                               f"(seq {seq}) is still {status}"))
        if work_kind != "delivery.send" or work != _WORK_STATUS.get(status):
            found.append(Violation("work_item", f"delivery {delivery_id} is {status} but its "
                                                f"work item is {work_kind}/{work}"))
        if history_id is not None and message is None:
            found.append(Violation("atomic_write", f"delivery {delivery_id} names history "
                                                   f"{history_id}, which does not exist"))
        kinds = events.get(delivery_id, Counter())
        if kinds["delivery.queued"] != 1:
            found.append(Violation("events", f"delivery {delivery_id} has "
                                             f"{kinds['delivery.queued']} delivery.queued events"))
        if kinds["delivery.sent"] > 1:
            found.append(Violation("duplicate", f"delivery {delivery_id} was recorded sent "
                                                f"{kinds['delivery.sent']} times"))
        if status != "queued" and kinds[f"delivery.{status}"] < 1:
            found.append(Violation("events", f"delivery {delivery_id} is {status} without a "
                                             f"delivery.{status} event"))
    trimmed = _pruned(conn)
    for session_id, numbers in seqs.items():
        if (numbers != list(range(1, len(numbers) + 1)) if not trimmed
                else any(b <= a for a, b in itertools.pairwise(numbers))):
            found.append(Violation("seq", f"session {session_id} has seqs {numbers[:20]}"))
    if check_turns:
        for turn_id, session_id in conn.execute(
                "SELECT turn_id, session_id FROM turns WHERE status = 'running'"):
            found.append(Violation("turn_terminal", f"turn {turn_id} of {session_id} was "
                                                    f"left running"))
    return found


def pruned(db_path: Any) -> bool:
    """Whether a prune (``rt.prune``, ``tidings prune``) has deleted anything from the
    database at *db_path*: its event horizon has risen (a delivery pruned took at least its
    ``delivery.queued`` event below it)."""
    conn = _read_only(db_path)
    try:
        return _pruned(conn)
    finally:
        conn.close()


def _pruned(conn: sqlite3.Connection) -> bool:
    try:
        row = conn.execute("SELECT lowest_kept FROM event_horizon").fetchone()
    except sqlite3.OperationalError:  # a database of a schema before retention (v5)
        return False
    return row is not None and row[0] > 1


def requeued_deliveries(db_path: Any) -> set[str]:
    """Deliveries that went back to ``queued`` (reconciled as missing, or unrouted then
    re-queued): they may legitimately reach a route twice and out of order."""
    conn = _read_only(db_path)
    try:
        return {delivery_id for (delivery_id,) in conn.execute(
            "SELECT DISTINCT delivery_id FROM events WHERE type = 'delivery.requeued'")}
    finally:
        conn.close()


def _statuses(db_path: Any) -> dict[str, tuple[str, int, str]]:
    """Each delivery's status, whether it is visible, and its session."""
    conn = _read_only(db_path)
    try:
        return {delivery_id: (status, visible, session_id)
                for delivery_id, status, visible, session_id in conn.execute(
                    "SELECT delivery_id, status, visible, session_id FROM outbox")}
    finally:
        conn.close()


# --- routes --------------------------------------------------------------------------------------


def _check_routes(routes: object) -> None:
    """``routes`` maps session ids to what records ``attempted`` and ``delivered`` (a
    :class:`MemoryRoute`): one route given alone, or a list, was an ``AttributeError`` about
    ``items`` (or ``attempted``) naming no argument."""
    if not isinstance(routes, Mapping):
        raise ValidationError("routes", f"must be a mapping of session id to route "
                                        f"({{session_id: route}}), got {routes!r:.80}")
    for session_id, route in routes.items():
        if not isinstance(session_id, str) or not all(
                isinstance(getattr(route, name, None), Collection)
                for name in ("attempted", "delivered")):
            raise ValidationError("routes", f"must map session ids to routes that record "
                                            f"attempted and delivered (a MemoryRoute), got "
                                            f"{session_id!r:.60}: {route!r:.60}")


def route_violations(routes: Mapping[str, MemoryRoute], *, db_path: Any = None,
                     requeued: Iterable[str] = ()) -> list[Violation]:
    """What the routes were handed (``routes`` maps a session id to its route; anything else
    is refused with :class:`ValidationError` naming ``routes``).

    * no delivery reached a route twice (unless it was re-queued);
    * per session, ``seq`` strictly increases over what the route was handed (re-queued
      deliveries aside: they keep their old ``seq``);
    * (once a prune has trimmed the database, a delivery it deleted may have been re-queued:
      its ``delivery.requeued`` event went with it, so the two checks above pass it);
    * every outbound went to the route of its own session (one route given for several
      sessions, a host's one platform adapter, is checked per session over that session's
      outbounds; one of a session it was not given for is misrouted);
    * with ``db_path``: whatever a route accepted is ``sent`` or ``unknown`` in the outbox
      (or gone, once a prune has trimmed the database: :func:`pruned`), and every visible
      ``sent`` row was accepted by its route; a ``sent`` row of a session ``routes`` has no
      route for is a ``routes`` violation (the caller left that session out: give ``routes``
      every session of the database).
    """
    _check_routes(routes)
    found: list[Violation] = []
    again = set(requeued)
    statuses: dict[str, tuple[str, int, str]] = {}
    trimmed = False
    if db_path is not None:
        again |= requeued_deliveries(db_path)
        statuses = _statuses(db_path)
        trimmed = pruned(db_path)
    accepted: dict[str, str] = {}
    if trimmed:  # whether a pruned delivery was re-queued is not known any more
        again |= {outbound.delivery_id for route in routes.values()
                  for outbound in route.attempted if outbound.delivery_id not in statuses}
    serves: dict[int, set[str]] = {}  # a route's sessions, by identity (routes may not hash)
    for session_id, route in routes.items():
        serves.setdefault(id(route), set()).add(session_id)
    for session_id, route in routes.items():
        shared = serves[id(route)]
        attempted = [outbound for outbound in route.attempted
                     if outbound.session_id == session_id or outbound.session_id not in shared]
        seen = Counter(outbound.delivery_id for outbound in attempted)
        for delivery_id, count in seen.items():
            if count > 1 and delivery_id not in again:
                found.append(Violation("duplicate", f"delivery {delivery_id} reached the route "
                                                    f"of {session_id} {count} times"))
        last = 0
        for outbound in attempted:
            if outbound.session_id != session_id:
                found.append(Violation("routing", f"delivery {outbound.delivery_id} of "
                                                  f"{outbound.session_id} reached the route "
                                                  f"of {session_id}"))
            if outbound.delivery_id in again:
                continue
            if outbound.seq <= last:
                found.append(Violation("order", f"session {session_id}: seq {outbound.seq} "
                                                f"({outbound.delivery_id}) after seq {last}"))
            last = max(last, outbound.seq)
        for outbound in route.delivered:
            if outbound.session_id == session_id or outbound.session_id not in shared:
                accepted[outbound.delivery_id] = session_id
    if db_path is not None:
        for delivery_id, session_id in accepted.items():
            status = statuses.get(delivery_id, ("missing", 1, session_id))[0]
            if status not in ("sent", "unknown") and not (trimmed and status == "missing"):
                found.append(Violation("outcome", f"the route of {session_id} accepted "
                                                  f"{delivery_id}, but the outbox says {status}"))
        for delivery_id, (status, visible, session_id) in statuses.items():
            if status != "sent" or not visible or delivery_id in accepted:
                continue
            if session_id not in routes:  # the caller's gap: what its route took is unknown
                found.append(Violation("routes", f"delivery {delivery_id} of {session_id} is "
                                                 f"sent, but {session_id} has no route in "
                                                 f"routes to check it against (give routes "
                                                 f"every session of the database)"))
            else:
                found.append(Violation("outcome", f"delivery {delivery_id} is sent, but the "
                                                  f"route of {session_id} never accepted it"))
    return found


# --- lanes ---------------------------------------------------------------------------------------


_BUSY = ("reserved", "held", "current", "taking", "unflushed", "overflow", "backlog",
         "committing")  # what else Lane.idle() looks at


def lane_violations(rt: Any) -> list[Violation]:
    """The dispatcher of a running runtime *rt* once everything is terminal and acked (every
    task blocked): each session lane is idle and holds nothing, its unacked rows gone and
    ``unacked_bytes``, ``queued_bytes`` and ``posted`` back to 0, as are the totals of
    ``rt.statistics().dispatch``. A count left above 0 holds the session's later rows back (the
    budget waits compare with it); below 0, lets them past it."""
    found: list[Violation] = []
    for session_id, lane in rt.dispatcher.lanes.items():
        held = {"unacked": len(lane.unacked), "unacked_bytes": lane.unacked_bytes,
                "queued_bytes": lane.queued_bytes, "posted": lane.posted}
        if any(held.values()) or not lane.idle():
            busy = {name: getattr(lane, name) for name in _BUSY if getattr(lane, name)}
            found.append(Violation("lane", f"the lane of {session_id} is not idle and empty: "
                                           + " ".join(f"{k}={v}" for k, v in held.items())
                                           + f" busy={busy!r}"))
    dispatch = rt.statistics().dispatch
    if dispatch.unacked_bytes or dispatch.queued_bytes:
        found.append(Violation("lane", f"dispatch statistics hold unacked_bytes="
                                       f"{dispatch.unacked_bytes} queued_bytes="
                                       f"{dispatch.queued_bytes}"))
    return found


# --- turn lifecycles ------------------------------------------------------------------------------


def lifecycle_violations(events: Iterable[Any], *, finished: bool = True) -> list[Violation]:
    """Task lifecycle events (a channel's ``on_task_lifecycle``), per session in order: each
    ``started`` is followed by exactly one terminal event (``completed``, ``cancelled`` or
    ``failed``) before the next ``started``; nothing but a ``started`` follows a terminal one.
    With ``finished``, every turn has ended (check it once the channel is idle)."""
    found: list[Violation] = []
    open_turns: dict[str, bool] = {}
    for event in events:
        session_id = event.session_id
        running = open_turns.get(session_id, False)
        if event.type == "started":
            if running:
                found.append(Violation("lifecycle", f"session {session_id}: a turn started "
                                                    f"before the last one ended"))
            open_turns[session_id] = True
        elif not running:
            found.append(Violation("lifecycle", f"session {session_id}: {event.type} outside "
                                                f"a turn (a second terminal event?)"))
        elif event.terminal:
            open_turns[session_id] = False
    if finished:
        found += [Violation("lifecycle", f"session {session_id}: a turn never ended")
                  for session_id, running in open_turns.items() if running]
    return found


# --- how the run ended -------------------------------------------------------------------------


def escalation_violations(error: BaseException | None) -> list[Violation]:
    """A run ends normally, or with one clear :class:`RestartIntensityExceeded` (never an
    ``ExceptionGroup``, never a bare ``Cancelled``)."""
    if error is None or isinstance(error, RestartIntensityExceeded):
        return []
    if isinstance(error, BaseExceptionGroup):
        return [Violation("escalation", f"an ExceptionGroup escaped: {error!r}")]
    return [Violation("escalation", f"the runtime ended with {type(error).__name__}: {error}")]


class InvariantChecker:
    """Gathers violations over a run: tasks, memory channels, faults, database, routes.

    ::

        checker = InvariantChecker()
        with checker.watch():                      # censuses + the fault ledger
            try:
                async with tidings.open_runtime(db, fault_plan=plan) as rt:
                    ...
            except RestartIntensityExceeded as exc:
                checker.ended(exc)
        checker.check_database(db)                 # after recovery, when nothing writes
        checker.check_routes(routes, db_path=db)
        checker.assert_ok()

    ``ledger`` (a :class:`FaultLedger`) accounts for every injected fault; code that catches
    an :class:`~tidings.errors.InjectedFault` of its own (a sender, a turn) reports it with
    :meth:`surfaced`.
    """

    def __init__(self) -> None:
        self.violations: list[Violation] = []
        self.ledger = FaultLedger()
        self.escalations = 0
        self._watched = False
        self._tasks: TaskCensus | None = None
        self._channels: ChannelCensus | None = None

    @contextmanager
    def watch(self) -> Iterator[InvariantChecker]:
        """Take the task and channel censuses and record the kernel's log while inside; on
        leaving, report tasks and channels the run left behind and faults nobody saw, also
        when the block raised (a run that escalated: that error goes on, caught around the
        block and told with :meth:`ended`)."""
        self._tasks = TaskCensus.take()
        self._channels = ChannelCensus.take()
        try:
            with self.ledger.recording():
                yield self
        finally:  # sync checks: nothing is awaited here
            self._watched = True
            self.check_leaks()
            self._masked()

    def _masked(self) -> None:
        """The ledger's unaccounted faults, each once: they replace those listed before (an
        earlier watch's, which the ledger still holds, or one since accounted for)."""
        self.violations = [v for v in self.violations if v.invariant != "masked_fault"]
        self.violations += [Violation("masked_fault", text) for text in self.ledger.unaccounted()]

    def surfaced(self, error: BaseException) -> None:
        """An :class:`InjectedFault` reached code outside the kernel (a send's caller)."""
        self.ledger.surfaced(error)

    def ended(self, error: BaseException | None) -> None:
        """How the runtime's ``async with`` ended (``None``: normally)."""
        if isinstance(error, RestartIntensityExceeded):
            self.escalations += 1
        self.violations += escalation_violations(error)

    def check_running(self, rt: Any) -> None:
        """The runtime is up: its root supervisor is ``running`` (an ``up`` violation names
        the state it is in otherwise). Its children's states are not looked at: one waiting
        out a backoff or a restart is part of a run that stays up."""
        stats = rt.supervisor.statistics()
        if stats.state != "running":
            self.violations.append(Violation("up", f"the root supervisor is {stats.state}"))

    def check_leaks(self) -> None:
        """Tasks and open memory channels created since :meth:`watch` began and still alive."""
        if self._tasks is not None:
            self.violations += [Violation("leaked_task", repr(task))
                                for task in self._tasks.leaked()]
        if self._channels is not None:
            self.violations += [Violation("leaked_channel", text)
                                for text in self._channels.leaked()]

    def check_database(self, db_path: Any, **options: Any) -> None:
        """Add :func:`database_violations` of the database at *db_path* to :attr:`violations`."""
        self.violations += database_violations(db_path, **options)

    def check_routes(self, routes: Mapping[str, MemoryRoute], **options: Any) -> None:
        """Add :func:`route_violations` of *routes* (by session id) to :attr:`violations`."""
        self.violations += route_violations(routes, **options)

    def check_lanes(self, rt: Any) -> None:
        """Add :func:`lane_violations` of the runtime *rt* to :attr:`violations`."""
        self.violations += lane_violations(rt)

    def check_lifecycles(self, events: Iterable[Any], **options: Any) -> None:
        """Each turn's lifecycle; a turn that failed on an injected send fault reported it
        (its ``failed`` event names it), so that fault is not counted as masked."""
        events = list(events)
        self.violations += lifecycle_violations(events, **options)
        for event in events:
            if event.type == "failed" and "InjectedFault" in event.error:
                self.ledger.reported(event.error, f"the failed event of {event.session_id}")
        if self._watched:
            self._masked()

    def assert_ok(self) -> None:
        """Raise :class:`InvariantViolation` listing every violation found, if there is one."""
        if self.violations:
            raise InvariantViolation(self.violations)

