"""The recovery scanner: a supervised actor that settles what crashes and stalls left behind.

At open (both recover modes) a ``sending`` row claimed by another process epoch becomes
``unknown`` at once, its attempt count and error kept: that process was handing it to a platform
when it died, so whether the platform has it is unknown, and it is never replayed on its own.
``queued`` progress rows of earlier processes become ``failed`` (``stale_progress``), and at open
so do their ``unrouted`` ones (by way of ``queued`` in the same write): a progress note is worth
nothing late. Turns an earlier process left ``running`` (it stopped before it could
record their end) become ``failed``, so every turn has exactly one terminal state. Then, with
``recover="at_open"`` at once, with ``"manual"`` when the host calls ``rt.recover()`` after
binding its routes, each accepted message an earlier process held unanswered (a turn its crash
or stop cut, or one waiting behind it) gets its "not answered" notice (:mod:`._held`), and every
session with ``queued`` rows has its lane kicked: they are dispatched in per-session order,
alongside new traffic.

Then the actor runs every ``scan_interval`` seconds of trio's clock: it re-kicks sessions whose
first ``queued`` row has waited ``stranded_after`` wall seconds or longer (so ``0`` kicks every
one, even a row written at the scan's own instant), fails stale progress, and reconciles
``unknown`` rows with routes that offer ``reconcile(delivery_ids)``
(answers ``"sent"`` / ``"missing"`` / ``None``: see :mod:`tidings.actors._reconcile`).

Routes bound after recovery are asked at once (a bind wakes the actor). A bind stays pending
until its reconcile finished: one bound while a ``recover()`` pass runs is asked by that pass
before it hands the queued rows on (bound later in the pass, it waits for the pass to arm the
scanner), and one whose reconcile raised or was cancelled (a store error, an injected fault)
is asked again by the restarted actor as soon as it starts. Every pass works in
pages of ``batch`` rows (no row cap), logs its progress as ``key=value`` lines on the
``tidings.recovery`` logger, and is idempotent: each move is a guarded transition that records
its event only when it applied, so repeating a pass (or a start-up) records nothing twice.
"""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Awaitable, Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Literal

import attrs
import trio

from tidings.actors._reconcile import reconcile_session, reconciler_of
from tidings.actors._status import check_id_list, check_seconds, seconds_bound
from tidings.errors import MailboxClosedError, TidingsError, ValidationError
from tidings.store import SessionHead, Store, end_stale_progress, end_turn, recovery, transition
from tidings.supervisor import Backoff, ChildContext, ChildSpec, Mailbox
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.actors._lanes import Dispatcher
    from tidings.actors._router import SessionInteractionRouter

__all__ = ["RECONCILE_CONCURRENCY", "RecoveryReport", "RecoveryScanner", "ScannerStatistics"]

log = logging.getLogger("tidings.recovery")

RECONCILE_CONCURRENCY = 16
"""Sessions whose routes a reconcile pass asks at the same time (each session's pages in
order): a platform that does not answer costs a pass ``reconcile_timeout`` per 16 sessions,
not per session."""

_DEAD_TURN = "the process stopped before it recorded how this turn ended"
_DEAD_CLAIM = "claimed by a process that stopped before recording the platform result"


@attrs.frozen
class RecoveryReport:
    """What one recovery pass (or scan) did; every field counts rows unless it says sessions."""

    unknown: int = 0
    """``sending`` rows of dead processes that became ``unknown``."""
    stale_progress: int = 0
    """``queued`` progress rows of earlier processes that became ``failed`` (and such
    ``unknown`` ones a reconciling route said the platform lacks, and at open their
    ``unrouted`` ones)."""
    queued_sessions: int = 0
    """Sessions whose ``queued`` rows were handed to their lanes by recovery."""
    stranded_sessions: int = 0
    """Sessions re-kicked by a scan because their first ``queued`` row waited too long."""
    reconciled_sent: int = 0
    """``unknown`` rows a route said the platform has: now ``sent``."""
    requeued: int = 0
    """``unknown`` rows a route proved missing: back to ``queued``."""
    undecided: int = 0
    """``unknown`` rows a reconciling route was asked about and left ``unknown``."""
    dead_turns: int = 0
    """Turns an earlier process left ``running``: now ``failed``."""
    unanswered: int = 0
    """Accepted messages an earlier process held unanswered: each told so by a notice."""

    def __add__(self, other: RecoveryReport) -> RecoveryReport:
        return RecoveryReport(*(a + b for a, b in zip(attrs.astuple(self),
                                                       attrs.astuple(other), strict=True)))


@attrs.frozen
class ScannerStatistics:
    """A snapshot of the scanner: whether its period runs, how many scans it made, what all its
    passes did together and what the last scan did."""

    armed: bool
    scans: int
    totals: RecoveryReport
    last_scan: RecoveryReport


class RecoveryScanner:
    """Recovery at open, on ``rt.recover()``, on binds and on a period (module docs).

    Its state (armed or not, binds waiting to be reconciled) lives here, not in the actor, so a
    crashed and restarted scanner carries on where it was.
    """

    def __init__(self, store: Store, dispatcher: Dispatcher, router: SessionInteractionRouter,
                 *, scan_interval: float = 30.0, stranded_after: float = 60.0,
                 batch: int = 1000, reconcile_timeout: float = 30.0,
                 tell_held: Callable[[int], Awaitable[int]] | None = None) -> None:
        check_seconds("scan_interval", scan_interval, positive=True)
        check_seconds("stranded_after", stranded_after)
        check_seconds("reconcile_timeout", reconcile_timeout)
        if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
            raise ValidationError("batch", f"must be an int >= 1, got {batch!r}")
        self._store = store
        self._dispatcher = dispatcher
        self._router = router
        self._tell_held = tell_held
        self._held_queued: list[str] = []  # held by _hold_queued until recover() kicks them
        self._opened_at_rowid: int | None = None  # the outbox's last rowid at open()
        self.scan_interval = seconds_bound(scan_interval)
        self.stranded_after = seconds_bound(stranded_after)
        self.batch = batch
        self.reconcile_timeout = seconds_bound(reconcile_timeout)
        self.armed = False
        self.totals = RecoveryReport()
        self.scans = 0
        self.last_scan = RecoveryReport()
        self._scanned = trio.Event()
        self._lock = trio.Lock()
        self._bound: set[str] = set()
        self._mailbox: Mailbox | None = None
        router.add_bind_listener(self._on_bind)

    def statistics(self) -> ScannerStatistics:
        """A frozen :class:`ScannerStatistics` snapshot (armed, scans, totals, last scan). Never
        blocks."""
        return ScannerStatistics(self.armed, self.scans, self.totals, self.last_scan)

    @property
    def opened_at_rowid(self) -> int | None:
        """The outbox's last rowid when this runtime opened (None before that; lowered by a
        prune that deleted the newest rows, see :meth:`outbox_pruned`): a row at or below it
        was written by an earlier process."""
        return self._opened_at_rowid

    def outbox_pruned(self, last_rowid: int) -> None:
        """A prune committed, leaving *last_rowid* the outbox's highest rowid (sync: called
        in the writer's task as it commits, before any later row is written). Every row of
        an earlier process still there is at or below it, and SQLite gives the rows written
        from now on the rowids above it: below the mark taken at open if the prune deleted
        the newest rows, so the mark comes down to it, or this process's own rows would read
        as an earlier process's (a progress note failed as stale)."""
        if self._opened_at_rowid is not None and last_rowid < self._opened_at_rowid:
            self._opened_at_rowid = last_rowid

    # --- the passes ----------------------------------------------------------------------------

    async def open(self, recover: Literal["at_open", "manual"]) -> RecoveryReport:
        """Recovery while the runtime opens: dead claims, stale progress and dead turns always
        (dead turns only here); with ``"at_open"`` also what :meth:`recover` does (no route is
        bound yet, so queued rows become ``unrouted``)."""
        # The lock says no other process has the database, and this one has begun nothing
        # yet: every turn still running and every queued progress note is an earlier
        # process's, whatever its time says (a restart's clock may be behind the dead one's).
        async with self._lock:
            report = await self._dead_claims() + await self._stale_progress(math.inf)
            report += await self._unrouted_progress()
            report += await self._dead_turns()
            # Every row an earlier process wrote is at or below it (see _stale_progress).
            self._opened_at_rowid = await self._store.read(recovery.last_outbox_rowid)
            if recover == "manual":
                await self._hold_queued()
        report = self._count(report)
        if recover == "at_open":
            report += await self.recover()
        return report

    async def recover(self) -> RecoveryReport:
        """A full recovery pass, then arm the periodic scan.

        Dead claims become ``unknown``, stale progress ``failed``; reconciling routes are asked
        about ``unknown`` rows; every session with ``queued`` rows is kicked. Returns once the
        rows are handed to their lanes (not once they are delivered).
        """
        async with self._lock:
            report = await self._dead_claims() + await self._stale_progress()
            report += await self._reconcile(await self._unknown_sessions())
            report += await self._reconcile_bound_in_pass()
            report += await self._kick_queued(stranded_only=False)
            held, self._held_queued = self._held_queued, []
            self._dispatcher.release_sessions(held)  # kicked: their lanes read them first
            # After the kick: a session whose lane has older rows to load must not take a
            # notice written already claimed ahead of them.
            report += await self._unanswered()
        self.armed = True
        self._poke()
        return self._count(report)

    async def scan(self) -> RecoveryReport:
        """One periodic pass: stranded sessions, stale progress, reconcile."""
        async with self._lock:
            report = await self._kick_queued(stranded_only=True)
            report += await self._stale_progress()
            report += await self._reconcile(await self._unknown_sessions())
        self.scans += 1
        self.last_scan = report
        self._scanned.set()
        self._scanned = trio.Event()
        return self._count(report)

    async def wait_scan(self) -> RecoveryReport:
        """Block until the next :meth:`scan` (periodic or called) finishes; return its report."""
        scanned = self._scanned
        await scanned.wait()
        return self.last_scan

    async def reconcile(self, session_ids: Iterable[str] | None = None) -> RecoveryReport:
        """Ask the bound reconciling routes about ``unknown`` rows (of *session_ids*, or of
        every session that has some) and apply their answers. *session_ids* that is a lone
        string or lists a non-id is refused (:class:`ValidationError` naming it) before
        anything is asked."""
        chosen = (None if session_ids is None
                  else sorted(check_id_list("session_ids", session_ids, "session ids",
                                            max_chars=None)))
        async with self._lock:
            sessions = await self._unknown_sessions() if chosen is None else chosen
            report = await self._reconcile(sessions)
        return self._count(report)

    def _count(self, report: RecoveryReport) -> RecoveryReport:
        self.totals += report
        return report

    async def _dead_claims(self) -> RecoveryReport:
        store = self._store
        progress = _Progress("recovery_unknown")
        while True:
            ids = await store.read(recovery.dead_claims, store.claimant, self.batch)
            if not ids:
                break
            now = store.clock()
            results = await store.commit([
                transition(delivery_id, "unknown", now=now, error=_DEAD_CLAIM,
                           only_from=("sending",)) for delivery_id in ids])
            if not progress.batch(len(ids), sum(result.applied for result in results)):
                break
        return RecoveryReport(unknown=progress.done())

    async def _dead_turns(self) -> RecoveryReport:
        """End failed every turn still ``running``: only at open, when all are an earlier
        process's (later, the only running turns are this process's own)."""
        store = self._store
        progress = _Progress("recovery_dead_turns")
        while True:
            ids = await store.read(recovery.dead_turns, math.inf, self.batch)
            if not ids:
                break
            now = store.clock()
            results = await store.commit([op for turn_id in ids for op in end_turn(
                turn_id, status="failed", now=now, error=_DEAD_TURN)])
            if not progress.batch(len(ids), sum(len(result) for result in results)):
                break
        return RecoveryReport(dead_turns=progress.done())

    async def _hold_queued(self) -> None:
        """``recover="manual"``: hold every session with ``queued`` rows until :meth:`recover`
        hands them to their lanes, so a send the host makes before that (its route bound, its
        lane idle and knowing nothing of them) does not go out ahead of them. So too every
        session with ``unknown`` rows: :meth:`recover` asks the reconciling routes about them
        before it lets the sessions go, and a row proved missing goes out again in its place,
        not after such a send."""
        def hold(sessions: list[str]) -> None:
            self._dispatcher.hold_sessions(sessions)
            self._held_queued += sessions

        await self._queued_pages(lambda heads: hold([head.session_id for head in heads]))
        queued = set(self._held_queued)
        after = ""
        while page := await self._store.read(recovery.unknown_sessions, after, self.batch):
            after = page[-1]
            hold([session_id for session_id in page if session_id not in queued])

    async def _queued_pages(self, each: Callable[[list[SessionHead]], None]) -> None:
        """Call *each* (sync) with every page of the first ``queued`` row of each session
        that has one, in session order."""
        after = ""
        while True:
            heads = await self._store.read(recovery.queued_heads, after, self.batch)
            if not heads:
                return
            after = heads[-1].session_id
            each(heads)

    async def _unanswered(self) -> RecoveryReport:
        """Tell each session about the messages an earlier process accepted and held but
        never dealt with (see :mod:`._held`)."""
        if self._tell_held is None:
            return RecoveryReport()
        return RecoveryReport(unanswered=await self._tell_held(self.batch))

    async def _stale_progress(self, before: float | None = None) -> RecoveryReport:
        """Fail ``queued`` progress notes created before *before* (by default: before this
        process's start, and written before it opened: a note of an earlier process that
        reconcile or ``rt.requeue`` put back to ``queued``; not one of this process's own
        that a wall clock stepped back after the open dates before its start)."""
        store = self._store
        bounded = before is None
        before = store.started_at if before is None else before
        progress = _Progress("recovery_stale_progress")
        while True:
            up_to = self._opened_at_rowid if bounded else None  # a prune may lower it
            ids = await store.read(recovery.stale_progress, before, self.batch, up_to)
            if not ids:
                break
            now = store.clock()
            results = await store.commit([
                transition(delivery_id, "failed", now=now, error="stale_progress",
                           only_from=("queued",)) for delivery_id in ids])
            if not progress.batch(len(ids), sum(result.applied for result in results)):
                break
        return RecoveryReport(stale_progress=progress.done())

    async def _unrouted_progress(self) -> RecoveryReport:
        """Only at open, when every row is an earlier process's: end its ``unrouted`` progress
        notes as stale ``queued`` ones are (``failed``, ``stale_progress``), by way of
        ``queued`` in one write as a hand-back ends one. Nothing else ever would: a channel
        hands back only the sessions it finds, and no prune deletes an ``unrouted`` row. Pages
        of ``batch`` rows of the ``outbox_unrouted_progress`` index, keyset-paged (no
        rescan): the ``unrouted`` messages and notices, which only grow, are never read."""
        store = self._store
        progress = _Progress("recovery_unrouted_progress")
        after: tuple[str, int] | None = ("", 0)
        while after is not None:
            ids, after = await store.read(recovery.unrouted_progress, after, self.batch)
            if not ids:
                continue
            now = store.clock()
            results = await store.commit(end_stale_progress(ids, "unrouted", now=now))
            progress.batch(len(ids), sum(result.applied for result in results[1::2]))
        return RecoveryReport(stale_progress=progress.done())

    async def _kick_queued(self, *, stranded_only: bool) -> RecoveryReport:
        """Kick every session with ``queued`` rows (or, for a scan, whose first one has waited
        ``stranded_after`` seconds or longer: ``0`` kicks them all, a row written at the
        scan's own clock reading too). A kick only makes the lane re-read the store: harmless
        for a lane that is busy with the session already."""
        cutoff = self._store.clock() - self.stranded_after if stranded_only else math.inf
        progress = _Progress("recovery_stranded" if stranded_only else "recovery_queued")

        def kick(heads: list[SessionHead]) -> None:
            kicked = 0
            for head in heads:
                if head.updated_at <= cutoff:
                    self._dispatcher.kick(head.session_id)
                    kicked += 1
            progress.batch(len(heads), kicked)

        await self._queued_pages(kick)
        kicked = progress.done()
        if stranded_only:
            return RecoveryReport(stranded_sessions=kicked)
        return RecoveryReport(queued_sessions=kicked)

    async def _unknown_sessions(self) -> list[str]:
        """Sessions that have ``unknown`` rows and a bound route that can reconcile."""
        found: list[str] = []
        after = ""
        while True:
            page = await self._store.read(recovery.unknown_sessions, after, self.batch)
            if not page:
                return found
            after = page[-1]
            found += [sid for sid in page if self._reconciler(sid) is not None]

    # --- reconcile (see _reconcile.py) ---------------------------------------------------------

    def _reconciler(self, session_id: str) -> object | None:
        return reconciler_of(self._router, session_id)

    async def _reconcile(self, session_ids: Iterable[str]) -> RecoveryReport:
        """Reconcile *session_ids*, up to :data:`RECONCILE_CONCURRENCY` sessions at a time: one
        after another, a platform that does not answer held every later session (and the
        hand-on of queued rows behind the pass) for ``reconcile_timeout`` each. Each session's
        rows stay in order; sessions are independent. A store error ends the pass, raised as
        itself (the others are cancelled), as when they ran one by one."""
        report = RecoveryReport()
        pending = iter(session_ids)
        failed: list[Exception] = []

        async def worker(scope: trio.CancelScope) -> None:
            nonlocal report
            for session_id in pending:  # shared: each session is taken by one worker
                try:
                    done = await reconcile_session(self._store, self._router,
                                                   self._dispatcher, session_id,
                                                   batch=self.batch,
                                                   ask_timeout=self.reconcile_timeout,
                                                   stale_up_to=self._opened_at_rowid)
                except Exception as exc:  # noqa: BLE001 - the first ends the pass, re-raised
                    failed.append(exc)
                    scope.cancel(reason="reconcile failed")
                    return
                report += RecoveryReport(reconciled_sent=done.sent, requeued=done.requeued,
                                         undecided=done.undecided, stale_progress=done.stale)

        async with trio.open_nursery() as nursery:
            for _ in range(RECONCILE_CONCURRENCY):
                nursery.start_soon(worker, nursery.cancel_scope)
        if failed:
            raise failed[0]
        if report != RecoveryReport():
            log.info("event=recovery_reconciled sent=%d requeued=%d undecided=%d",
                     report.reconciled_sent, report.requeued, report.undecided)
        return report

    # --- the actor -----------------------------------------------------------------------------

    def child_spec(self, name: str = "recovery") -> ChildSpec:
        """The supervised actor: permanent, woken by binds and by :meth:`recover`.

        Restarted with a backoff (0.5 s doubling to 30 s: a handful of restarts a minute, well
        within the root's intensity): a restarted incarnation asks the binds its predecessor
        failed on at once, so an error that lasts (the store's, a fault) was a tight crash
        loop that made the root give up, and the runtime died."""
        return ChildSpec(name, self.run, restart="permanent", shutdown_timeout=1.0,
                         mailbox_size=1, backoff=Backoff(min=0.5, max=30.0))

    async def run(self, ctx: ChildContext, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Scan every ``scan_interval`` once armed; reconcile newly bound sessions on a poke.

        Ends when the shutdown ladder closes its mailbox.
        """
        self._mailbox = ctx.supervisor.mailbox(ctx.name)
        task_status.started()
        deadline = trio.current_time() + self.scan_interval if self.armed else math.inf
        # Binds an earlier incarnation did not finish (it crashed handling them, or a fault
        # took their wake): nobody pokes for them again, so they go first.
        pending = bool(self._bound)
        while True:
            if not pending:
                woken = False
                with trio.move_on_at(deadline):
                    try:
                        await ctx.mailbox.receive()
                    except trio.EndOfChannel:
                        return
                    woken = True
                if not woken:
                    await self.scan()
                    deadline = trio.current_time() + self.scan_interval
                    continue
            pending = False
            if self.armed and deadline == math.inf:
                deadline = trio.current_time() + self.scan_interval
            await self._reconcile_bound()

    async def _reconcile_bound(self) -> None:
        """Reconcile the sessions bound since the last time, keeping them until that is done.

        Before the scanner is armed they wait: a ``recover()`` pass holds the lock and may have
        chosen its sessions before the bind, and it pokes once it arms. If the reconcile raises
        or is cancelled (a store error, an injected fault), they are put back before the error
        goes on, so the restarted incarnation asks them at once, not a ``scan_interval`` later.
        Asking a session twice is harmless: only rows still ``unknown`` are asked about.
        """
        if not self.armed or not self._bound:
            return
        with self._taking_bound() as bound:  # binds from now on wait for the next wake
            await self.reconcile(bound)

    async def _reconcile_bound_in_pass(self) -> RecoveryReport:
        """In :meth:`recover`, before its queued rows are handed on: reconcile the sessions
        whose reconciling route was bound while the pass ran (after it chose its sessions).
        Asked after the hand-on (by the woken actor), a row their platform lacks went out
        after the rows a ``"manual"`` hold kept behind it. Binds made meanwhile are asked
        too; the lock is held, so this calls :meth:`_reconcile` (as :meth:`_reconcile_bound`
        does, they are put back if it raises)."""
        report = RecoveryReport()
        while self._bound:
            with self._taking_bound() as bound:
                report += await self._reconcile(sorted(bound))
        return report

    @contextlib.contextmanager
    def _taking_bound(self) -> Iterator[set[str]]:
        """The sessions bound so far, taken (later binds gather anew); put back if what is
        done with them raises or is cancelled, so they are asked again."""
        bound, self._bound = self._bound, set()
        try:
            yield bound
        except BaseException:
            self._bound |= bound
            raise

    def _on_bind(self, session_id: str) -> None:
        """Router bind listener (sync): a reconciling route was bound; ask it soon."""
        # Also while a pass holds the lock: it may have chosen its sessions before this bind.
        if ((self.armed or self._lock.locked())
                and self._reconciler(session_id) is not None):
            self._bound.add(session_id)
            self._poke()

    def _poke(self) -> None:
        mailbox = self._mailbox
        if mailbox is None:
            return
        try:
            mailbox.send_nowait("wake")
        except trio.WouldBlock:
            pass  # a wake is already waiting
        except MailboxClosedError as exc:  # stopping: nothing to wake
            log.debug("event=recovery_poke_dropped error=%s", field(repr(exc)))
        except TidingsError as exc:  # anything else (a fault plan) is worth a line: the
            log.info("event=recovery_poke_dropped error=%s",  # the period covers it
                     field(repr(exc)))


class _Progress:
    """Counts a paged pass and logs it: every tenth page and the end, ``key=value``."""

    def __init__(self, event: str) -> None:
        self.event = event
        self.pages = 0
        self.seen = 0
        self.moved = 0

    def batch(self, seen: int, moved: int) -> bool:
        """Record one page; False when nothing moved (the caller stops instead of spinning)."""
        self.pages += 1
        self.seen += seen
        self.moved += moved
        if self.pages % 10 == 0:
            log.info("event=%s pages=%d seen=%d moved=%d", self.event, self.pages, self.seen,
                     self.moved)
        return moved > 0

    def done(self) -> int:
        if self.pages:
            log.info("event=%s done=1 pages=%d seen=%d moved=%d", self.event, self.pages,
                     self.seen, self.moved)
        return self.moved
