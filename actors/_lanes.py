"""Session routes: one actor per session with traffic, keeping that session's order.

The :class:`Dispatcher` hands each committed delivery to its session's :class:`Lane`, an actor
(a transient child of the ``routes`` supervisor) with a bounded mailbox. A lane claims a row
(``sending``, durable) right before that row's own ``deliver()`` — at most one ``sending`` row
per session — then records ``sent`` or ``failed``; with no route bound, ``unrouted``. A slow or
stuck route stalls only its own lane.

The mailbox is a cache, the outbox is the truth: when a lane's mailbox is full (or lost with a
crash), the lane switches to *overflow* and reads its session's ``queued`` rows back from the
store, in seq order, until it has caught up. Nothing is dropped and memory stays bounded.
A lane whose work is done exits; the next delivery for its session starts a new one.
"""

from __future__ import annotations

import collections
import functools
import itertools
import logging
from collections.abc import Callable

import attrs
import trio

from tidings.actors._handle import DeliveryItem, HandleRegistry
from tidings.actors._outbound import build_outbound, item_from_row
from tidings.actors._router import SessionInteractionRouter
from tidings.errors import MailboxClosedError
from tidings.store import Store, Transition, queries, transition
from tidings.supervisor import ChildContext, ChildSpec, MailboxReceiver, Supervisor

__all__ = ["DispatchStatistics", "Dispatcher", "Lane", "describe_error", "outcome_of"]

log = logging.getLogger("tidings.dispatch")

_STATUS_OF = {"sent": "delivered", "failed": "failed", "unrouted": "unrouted",
              "unknown": "unknown"}


def describe_error(error: BaseException, limit: int = 500) -> str:
    """``Type: message``, capped, for ``last_error``."""
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= limit else text[:limit - 1] + "…"


class Lane:
    """The dispatch state of one session; it outlives crashes of its actor."""

    __slots__ = ("backlog", "claimed", "current", "cursor", "max_seen", "name", "overflow",
                 "reread", "rewind", "session_id", "unflushed")

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.name: str | None = None          # the running child's name, if any
        self.cursor = 0                       # highest seq taken for dispatch
        self.max_seen = 0                     # highest seq that arrived while overflowing
        self.overflow = False                 # some queued rows are only in the store
        self.backlog: collections.deque[DeliveryItem] = collections.deque()
        self.current: DeliveryItem | None = None
        self.claimed = False
        self.unflushed: list[DeliveryItem] = []  # delivered; ``sent`` not yet committed
        self.reread = False                   # mailbox contents are suspect: read the store
        self.rewind = False                   # next refill starts from seq 0 (rows re-queued)

    def forget_memory(self) -> None:
        """After a crash, what was in memory (mailbox, backlog) may have lost an item: drop it
        and re-read every ``queued`` row from the store, in seq order."""
        self.reread = True
        self.overflow = True
        self.cursor = 0
        self.backlog.clear()

    def has_work(self) -> bool:
        return bool(self.overflow or self.backlog or self.current or self.unflushed)


@attrs.frozen
class DispatchStatistics:
    lanes: int
    running: int
    overflowing: int
    delivered: int
    failed: int
    unrouted: int


class Dispatcher:
    """Schedules committed deliveries onto lanes (see the module docstring)."""

    def __init__(self, store: Store, router: SessionInteractionRouter,
                 registry: HandleRegistry, *, mailbox_size: int = 64, refill_batch: int = 256,
                 lease: float = 300.0, grace: float = 2.0, linger: float = 5.0) -> None:
        self._store = store
        self._router = router
        self._registry = registry
        self._mailbox_size = mailbox_size
        self._refill_batch = refill_batch
        self._lease = lease
        self.grace = grace
        self.linger = linger
        self._lanes: dict[str, Lane] = {}
        self._sup: Supervisor | None = None
        self._names = itertools.count(1)
        self._stopping = False
        self._delivering: dict[str, trio.CancelScope] = {}
        self._lingering: dict[str, trio.CancelScope] = {}
        self._running = 0
        self._idle = trio.Event()
        self._idle.set()
        self._counts = collections.Counter[str]()
        self.on_terminal: Callable[[DeliveryItem, str], None] | None = None

    # --- wiring --------------------------------------------------------------------------------

    def attach(self, supervisor: Supervisor) -> None:
        """Run lanes under *supervisor* (a new ``routes`` incarnation); restart pending lanes."""
        self._sup = supervisor
        for lane in list(self._lanes.values()):
            if lane.has_work():
                self._ensure_running(lane)

    def detach(self) -> None:
        """The ``routes`` supervisor is gone: its mailboxes too, so every lane re-reads."""
        self._sup = None
        for lane in self._lanes.values():
            if lane.name is not None:
                lane.name = None
                lane.forget_memory()
        self._running = 0
        self._idle.set()

    # --- scheduling (sync: called from the writer's on_commit) ---------------------------------

    def schedule(self, item: DeliveryItem) -> None:
        """Queue a committed delivery for its session. Never blocks, never drops."""
        lane = self._lanes.get(item.session_id)
        if lane is None:
            lane = self._lanes[item.session_id] = Lane(item.session_id)
        if lane.overflow or self._sup is None or self._stopping:
            self._overflow(lane, item.seq)
            return
        self._ensure_running(lane)
        assert lane.name is not None
        assert self._sup is not None
        try:
            self._sup.mailbox(lane.name).send_nowait(item)
        except (trio.WouldBlock, MailboxClosedError):
            self._overflow(lane, item.seq)

    def kick(self, session_id: str) -> None:
        """Make the session's lane read its ``queued`` rows from the store (recovery, rebinds).

        Its next refill starts from the session's first ``queued`` row, also one below what the
        lane already took (a row re-queued by reconcile keeps its old ``seq``).
        """
        lane = self._lanes.get(session_id)
        if lane is None:
            lane = self._lanes[session_id] = Lane(session_id)
        lane.rewind = True
        self._overflow(lane, 0)

    def _overflow(self, lane: Lane, seq: int) -> None:
        lane.overflow = True
        lane.max_seen = max(lane.max_seen, seq)
        if self._sup is not None and not self._stopping:
            self._ensure_running(lane)

    def _ensure_running(self, lane: Lane) -> None:
        if lane.name is not None or self._sup is None:
            return
        lane.name = f"route:{lane.session_id}:{next(self._names)}"
        self._running += 1
        if self._idle.is_set():
            self._idle = trio.Event()
        self._sup.start_child_soon(ChildSpec(
            lane.name, functools.partial(self._run_lane, lane), restart="transient",
            shutdown_timeout=self.grace, start_timeout=None, mailbox_size=self._mailbox_size))

    # --- stopping ------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop taking work: lanes finish their current delivery, up to ``grace`` seconds, then
        their ``deliver()`` calls are cancelled (their rows stay ``sending``: ``unknown`` at the
        next start). Queued rows stay queued for the next start. Always a checkpoint."""
        self._stopping = True
        for scope in list(self._lingering.values()):
            scope.cancel(reason="shutdown: idle lane")
        with trio.move_on_after(self.grace):
            await self._idle.wait()
        for scope in list(self._delivering.values()):
            scope.cancel(reason="shutdown: the runtime is stopping")
        await trio.lowlevel.checkpoint()

    def statistics(self) -> DispatchStatistics:
        lanes = self._lanes.values()
        return DispatchStatistics(
            lanes=len(self._lanes), running=self._running,
            overflowing=sum(lane.overflow for lane in lanes), delivered=self._counts["delivered"],
            failed=self._counts["failed"], unrouted=self._counts["unrouted"])

    @property
    def supervisor(self) -> Supervisor | None:
        """The ``routes`` supervisor the lanes run under now (None between incarnations)."""
        return self._sup

    def lane(self, session_id: str) -> Lane | None:
        return self._lanes.get(session_id)

    # --- the lane actor ------------------------------------------------------------------------

    async def _run_lane(self, lane: Lane, ctx: ChildContext, *,
                        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        if ctx.incarnation > 1:  # restarted after a crash
            lane.forget_memory()
        if lane.reread:
            _drain(ctx.mailbox)
            lane.reread = False
        await self._settle(lane)
        await self._serve(lane, ctx.mailbox)
        # Returned normally: the lane is idle. No checkpoint since the last idle check.
        lane.name = None
        self._running -= 1
        if not lane.has_work():
            del self._lanes[lane.session_id]
        if self._running == 0:
            self._idle.set()

    async def _serve(self, lane: Lane, mailbox: MailboxReceiver) -> None:
        while True:
            item = None if self._stopping else self._next_nowait(lane, mailbox)
            if item is not None:
                await self._process(lane, item)
                continue
            if lane.unflushed:
                await self._flush(lane)
                continue
            if lane.overflow and not self._stopping:
                await self._refill(lane)
                continue
            if self._stopping:
                return
            held = await self._linger(lane, mailbox)
            if held is None:
                if lane.has_work():
                    continue
                return
            await self._process(lane, held)

    async def _linger(self, lane: Lane, mailbox: MailboxReceiver) -> DeliveryItem | None:
        """Wait up to ``linger`` seconds for the next item; None: nothing came.

        Keeping a lane a little while saves starting an actor per delivery for a session that
        talks steadily. The final non-blocking look happens with no checkpoint before the
        caller returns, so nothing can be put in a mailbox that is about to be dropped.
        """
        with trio.move_on_after(self.linger) as scope:
            self._lingering[lane.session_id] = scope  # stop() cancels it
            try:
                return await mailbox.receive()
            except trio.EndOfChannel:
                self._stopping = True
                return None
            finally:
                del self._lingering[lane.session_id]
        try:
            return mailbox.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return None

    def _next_nowait(self, lane: Lane, mailbox: MailboxReceiver) -> DeliveryItem | None:
        try:
            return mailbox.receive_nowait()
        except trio.WouldBlock:
            pass
        except trio.EndOfChannel:  # the shutdown ladder closed the mailbox
            self._stopping = True
            return None
        return lane.backlog.popleft() if lane.backlog else None

    async def _refill(self, lane: Lane) -> None:
        target = lane.max_seen
        if lane.rewind:  # nothing is in memory now (refills wait for an empty backlog)
            lane.cursor, lane.rewind = 0, False
        rows = await self._store.read(functools.partial(
            queries.open_outbox_rows, after_seq=lane.cursor, limit=self._refill_batch),
            lane.session_id)
        for row in rows:
            live = self._registry.get(row.delivery_id)
            lane.backlog.append(live if live is not None else item_from_row(row))
        if not rows:
            lane.cursor = max(lane.cursor, target)
            if lane.cursor >= lane.max_seen:
                lane.overflow = False

    async def _process(self, lane: Lane, item: DeliveryItem) -> None:
        lane.cursor = max(lane.cursor, item.seq)
        binding = self._router.binding(item.session_id)
        now = self._store.clock()
        flushed = self._take_unflushed(lane)
        if binding is None:
            await self._commit(flushed, [(item, transition(item.delivery_id, "unrouted",
                                                           now=now))])
            return
        lane.current, lane.claimed = item, False
        outbound, degraded = build_outbound(item, binding.capabilities, attempt=1)
        extra = [("delivery.degraded", {"missing": degraded, "route": type(binding.route).__name__})
                 ] if degraded else []
        claim = transition(item.delivery_id, "sending", now=now, claimant=self._store.claimant,
                           lease_expires_at=now + self._lease, extra_events=extra)
        applied = await self._commit(flushed, [(item, claim)])
        if not applied:  # someone else already moved this row on
            lane.current = None
            return
        lane.claimed = True
        outbound = attrs.evolve(outbound, attempt=applied[0])
        try:
            with trio.CancelScope() as scope:
                self._delivering[lane.session_id] = scope
                await binding.deliver(outbound)
        except Exception as exc:  # noqa: BLE001 - any error from a route is that delivery's failure
            failed = transition(item.delivery_id, "failed", now=self._store.clock(),
                                error=describe_error(exc))
            await self._commit([], [(item, failed)])
            lane.current = None
            return
        finally:
            self._delivering.pop(lane.session_id, None)
        if scope.cancelled_caught:  # stopped mid-delivery: the row stays ``sending``
            self._stopping = True
            return
        lane.current = None
        lane.unflushed.append(item)

    async def _flush(self, lane: Lane) -> None:
        await self._commit(self._take_unflushed(lane), [])

    def _take_unflushed(self, lane: Lane) -> list[tuple[DeliveryItem, Transition]]:
        if not lane.unflushed:
            return []
        now = self._store.clock()
        moves = [(item, transition(item.delivery_id, "sent", now=now)) for item in lane.unflushed]
        lane.unflushed = []
        return moves

    async def _commit(self, before: list[tuple[DeliveryItem, Transition]],
                      moves: list[tuple[DeliveryItem, Transition]]) -> list[int]:
        """Commit *before* + *moves* in one transaction; resolve items whose move applied.

        Returns the attempt counts of the applied *moves*. If the write fails, items of
        *before* go back to ``unflushed`` (their delivery already happened).
        """
        pairs = before + moves
        try:
            results = await self._store.commit([move for _, move in pairs])
        except BaseException:
            self._restore(before)
            raise
        attempts = []
        for index, ((item, move), result) in enumerate(zip(pairs, results, strict=True)):
            if not result.applied:
                continue
            if index >= len(before):
                attempts.append(result.attempts)
            if move.to in _STATUS_OF:
                self._resolve(item, _STATUS_OF[move.to])
        return attempts

    def _restore(self, before: list[tuple[DeliveryItem, Transition]]) -> None:
        for item, _ in before:
            lane = self._lanes.get(item.session_id)
            if lane is not None:
                lane.unflushed.append(item)

    def _resolve(self, item: DeliveryItem, status: str) -> None:
        item.resolve(status)
        self._counts[status] += 1
        if self.on_terminal is not None:
            self.on_terminal(item, status)

    async def _settle(self, lane: Lane) -> None:
        """Close what a crashed incarnation left: delivered rows become ``sent``; the row it
        was handling becomes ``unknown`` if it was claimed (the platform may have it) or
        ``failed`` if not. That message is not retried."""
        now = self._store.clock()
        moves = self._take_unflushed(lane)
        current, lane.current = lane.current, None
        if current is not None:
            if lane.claimed:
                moves.append((current, transition(
                    current.delivery_id, "unknown", now=now,
                    error="the session route crashed while delivering")))
            else:
                moves.append((current, transition(
                    current.delivery_id, "failed", now=now,
                    error="the session route crashed before delivering")))
        if moves:
            await self._commit([], moves)


def _drain(mailbox: MailboxReceiver) -> None:
    """Drop what is buffered: those rows are durable and will be re-read in order."""
    while True:
        try:
            mailbox.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return


def outcome_of(status: str) -> str:
    """The in-memory outcome for a terminal outbox status."""
    return _STATUS_OF.get(status, status)

