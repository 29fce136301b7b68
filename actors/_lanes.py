"""Session routes: one actor per session with traffic, keeping that session's order.

The :class:`Dispatcher` hands each committed delivery to its session's :class:`Lane`, an actor
(a transient child of the ``routes`` supervisor, run by ``_lane_actor``) with a bounded mailbox.
A lane claims a row (``sending``, durable) right before that row's own ``deliver()`` — at most
one ``sending`` row per session — then records ``sent`` or ``failed``; with no route bound,
``unrouted``. A slow or stuck route stalls only its own lane.

The mailbox is a cache, the outbox is the truth: when a lane's mailbox is full (or lost with a
crash), the lane switches to *overflow* and reads its session's ``queued`` rows back from the
store, in seq order, until it has caught up. Nothing is dropped and memory stays bounded:
by count (``mailbox_size`` posted, ``refill_batch`` read back) and by the size of what a lane
holds (``lane_bytes`` per lane; each delivery's ``size``, :func:`tidings.store._records.held_size`:
the length of its text, plus that of its blocks' and metadata's JSON as stored, a lone text
block not counted twice: a text may be up to ``MAX_TEXT_BYTES``, and so may a media block's
location, and a send may carry many control blocks of up to ``MAX_JSON_BYTES`` each, with no
text at all). A post that would take the lane past it overflows as a full mailbox does, and a
refill stops reading at it; a lane holding nothing always takes one, so a delivery larger than
the budget still goes. Each costs one attribute read and an add per delivery. Rows an acking
route has not acked yet are held too (``Lane.unacked``, until the client acks): they count in
``Lane.unacked_bytes``, and a lane whose unacked rows would go past ``lane_bytes`` waits for
acks as it waits for room in the ack window (one row always goes).
A lane that has been idle for ``linger`` seconds exits; the next delivery starts a new one.

A binder that hands a session's older rows back after binding it (a gateway client's hello
re-queues the ``unrouted`` ones) binds inside :meth:`Dispatcher.hold_binds`: until the block
ends, that session's lane claims nothing, so no newer row reaches the new route before them.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import logging
from collections.abc import AsyncIterator, Collection, Iterable
from typing import Any

import attrs
import trio

from tidings.actors._handle import (
    TERMINAL,
    DeliveryItem,
    HandleRegistry,
    describe_error,
    outcome_of,
)
from tidings.actors._lane_actor import HANDED_BACK, RETIRE, WAKE, LaneWorker, send_back
from tidings.actors._router import SessionInteractionRouter
from tidings.actors._status import check_id_list, check_session_id
from tidings.errors import MailboxClosedError, TidingsError
from tidings.store import Store, transition
from tidings.supervisor import ChildSpec, Supervisor
from tidings.supervisor._log import field

__all__ = ["DispatchStatistics", "Dispatcher", "Lane", "check_delivery_ids", "describe_error",
           "outcome_of"]

log = logging.getLogger("tidings.dispatch")


def check_delivery_ids(values: Iterable[str]) -> list[str]:
    """*values* as a list of delivery ids, repeats dropped, or an error naming
    ``delivery_ids`` (see :func:`check_id_list`). Checked before anything is written."""
    return check_id_list("delivery_ids", values, "delivery ids")


class Lane:
    """The dispatch state of one session; it outlives crashes of its actor."""

    __slots__ = ("backlog", "claimed", "committing", "current", "cursor", "delivering",
                 "flushing", "held", "holding", "idle_since", "kicks", "max_seen", "moved_on",
                 "name", "overflow", "parked", "posted", "queued_bytes", "reflush", "reread",
                 "reserved", "rewind", "scope", "session_id", "taking", "unacked",
                 "unacked_bytes", "unclaimed", "unflushed", "unrouting", "waiting", "window")

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.name: str | None = None          # the running child's name, if any
        self.cursor = 0                       # highest seq taken for dispatch
        self.max_seen = 0                     # highest seq that arrived while overflowing
        self.overflow = False                 # some queued rows are only in the store
        self.backlog: collections.deque[DeliveryItem] = collections.deque()
        self.posted = 0                       # deliveries put in the mailbox, not yet taken
        self.queued_bytes = 0                 # the sizes of those and of the backlog
        self.current: DeliveryItem | None = None
        self.taking = False                   # a delivery taken, waiting to be claimed
        self.claimed = False
        self.unclaimed = False                # the store refused a write before its I/O:
                                              # send ``current`` back (claimed or not)
        self.unflushed: list[DeliveryItem] = []  # delivered; ``sent`` not yet committed
        self.reread = False                   # mailbox contents are suspect: read the store
        self.rewind = False                   # next refill starts from seq 0 (rows re-queued)
        self.kicks = 0                        # kicks so far (a claimed row checks each once)
        self.reserved = False                 # a delivery is being written already claimed
        self.held: DeliveryItem | None = None  # that delivery, committed, waiting for the lane
        self.committing = 0                   # lane writes in flight
        self.flushing: trio.Event | None = None  # set when a flush in the background ends
        self.reflush = False                  # that flush failed: flush in the foreground
        self.scope: trio.CancelScope | None = None  # the running incarnation's scope
        self.delivering = False               # inside a route's deliver()
        self.idle_since: float | None = None  # parked waiting for work since (trio clock)
        self.parked: trio.CancelScope | None = None  # around that wait: cancel it to nudge
        self.unacked: dict[str, DeliveryItem] = {}  # delivered to an acking route, not acked
        self.unacked_bytes = 0                # the sizes of those (held until acked)
        self.moved_on: list[DeliveryItem] = []  # unacked rows someone else ended: resolve
                                              # from the store (the lane, or an abandon)
        self.window = trio.Event()            # set when an ack frees room in the window
        self.waiting = False                  # waiting for ack-window room or a hold's end
        self.holding: trio.CancelScope | None = None  # a claimed row's wait for a hold's end
        self.unrouting: trio.Event | None = None  # set when an ``unrouted`` write in flight ends

    def forget_memory(self) -> None:
        """After a crash, what was in memory (mailbox, backlog) may have lost an item: drop it
        and re-read every ``queued`` row from the store, in seq order."""
        self.reread = True
        self.overflow = True
        self.cursor = 0
        self.posted = self.queued_bytes = 0  # the mailbox is drained: those are re-read too
        self.backlog.clear()

    def idle(self) -> bool:
        """Nothing of this session is queued, claimed, delivered-but-unrecorded or reserved."""
        return not (self.reserved or self.held or self.current or self.taking
                    or self.posted or self.unflushed or self.overflow or self.backlog
                    or self.committing or self.unacked)

    def has_work(self) -> bool:
        return bool(self.overflow or self.backlog or self.current or self.unflushed
                    or self.reserved or self.held or self.unacked
                    or self.flushing is not None)

    def room(self) -> None:
        """Wake a lane waiting for its ack window."""
        self.window.set()
        self.window = trio.Event()


def _unstarted(lane: Lane) -> DeliveryItem | None:
    """The row *lane* claimed whose ``deliver()`` has not begun, if any: one written claimed
    and not taken yet, or its current one while it runs. A lane that ended (cut off inside
    ``deliver()``, or crashed and not settled yet) has ``delivering`` unset for a row whose
    platform I/O began: none then."""
    if lane.held is not None:
        return lane.held
    if lane.scope is not None and lane.claimed and not lane.delivering:
        return lane.current
    return None


class _BindHold:
    """One :meth:`Dispatcher.hold_binds` block: its route and the sessions it holds."""

    __slots__ = ("route", "sessions")

    def __init__(self, route: object) -> None:
        self.route = route
        self.sessions: set[str] = set()


@attrs.frozen
class DispatchStatistics:
    """A snapshot of the dispatcher (``rt.statistics().dispatch``), taken without a wait.

    ``lanes`` is the sessions with a lane now and ``running`` those whose lane task is up;
    ``overflowing`` counts the lanes reading their ``queued`` rows back from the store (their
    mailbox or byte budget was full). ``delivered``, ``failed`` and ``unrouted`` count the
    terminal ends since the runtime opened, each delivery once. A frozen record, so a caller
    compares two snapshots instead of watching the dispatcher's state change under it."""

    lanes: int
    running: int
    overflowing: int
    delivered: int
    failed: int
    unrouted: int
    queued_bytes: int = 0
    """The size of what the lanes hold in memory (mailboxes and backlogs read back): the length
    of each delivery's text and of its blocks' and metadata's JSON (``DeliveryItem.size``)."""
    unacked_bytes: int = 0
    """The size, counted so, of the rows acking routes were given and their clients have not
    acked yet (held in memory until then, within ``lane_bytes`` per lane too)."""


class Dispatcher:
    """Schedules committed deliveries onto lanes (see the module docstring)."""

    def __init__(self, store: Store, router: SessionInteractionRouter,
                 registry: HandleRegistry, *, mailbox_size: int = 64, refill_batch: int = 32,
                 lane_bytes: int = 1 << 20, lease: float = 300.0, grace: float = 2.0,
                 linger: float = 5.0) -> None:
        self.store = store
        self.router = router
        self.registry = registry
        self.mailbox_size = mailbox_size
        self.refill_batch = refill_batch
        # Per lane, as mailbox_size is: one budget shared by every lane would let a stuck
        # session's lane hold it and send every other session to the store for each row.
        self.lane_bytes = lane_bytes
        self.lease = lease
        self.grace = grace
        self.linger = linger
        self.lanes: dict[str, Lane] = {}
        self.stopping = False  # lanes take nothing new (also while routes is torn down)
        self._stopped = False  # stop() was called: the runtime is stopping for good
        self.counts = collections.Counter[str]()
        self._sup: Supervisor | None = None
        self._names = itertools.count(1)
        self._running = 0
        self._idle = trio.Event()
        self._idle.set()
        self._janitor_wake: trio.Event | None = None  # set while the janitor waits for a park
        self._worker = LaneWorker(self)
        self._binders: list[_BindHold] = []  # open hold_binds() blocks
        self._holds = collections.Counter[str]()  # session -> blocks holding it
        self._unheld: dict[str, trio.Event] = {}  # session -> set when no block holds it
        router.add_bind_listener(self._rebound)
        router.add_unbind_listener(self._unbound)

    # --- wiring --------------------------------------------------------------------------------

    @property
    def supervisor(self) -> Supervisor | None:
        """The ``routes`` supervisor the lanes run under now (None between incarnations)."""
        return self._sup

    def attach(self, supervisor: Supervisor) -> None:
        """Run lanes under *supervisor* (a new ``routes`` incarnation); restart pending lanes.

        Tearing the last incarnation down closed its lanes' mailboxes, which a lane takes for
        the runtime stopping (``stopping``): unless :meth:`stop` was called, dispatch runs
        again. Left set, every later row of every session stayed ``queued``, the runtime up."""
        self._sup = supervisor
        self.stopping = self._stopped
        for lane in list(self.lanes.values()):
            if lane.has_work():
                self._ensure_running(lane)

    def detach(self) -> None:
        """The ``routes`` supervisor is gone: its mailboxes too, so every lane re-reads."""
        self._sup = None
        for lane in self.lanes.values():
            if lane.name is not None:
                lane.name = None
                lane.forget_memory()
        self._running = 0
        self._idle.set()

    async def janitor(self) -> None:
        """Retire lanes idle for ``linger`` seconds (run it in the ``routes`` child).

        Every ``linger`` seconds while some lane is parked, so a lane lingers between one and
        two ``linger`` periods; while none is, it waits for :meth:`lane_parked` instead of
        ticking, so an idle runtime does not wake up for nothing.
        """
        while True:
            if not any(lane.idle_since is not None for lane in self.lanes.values()):
                self._janitor_wake = wake = trio.Event()
                try:
                    await wake.wait()
                finally:
                    self._janitor_wake = None
            await trio.sleep(self.linger)
            now = trio.current_time()
            for lane in list(self.lanes.values()):
                if lane.idle_since is not None and now - lane.idle_since >= self.linger:
                    self._post(lane, RETIRE)

    def lane_parked(self) -> None:
        """A lane began waiting for work: make sure the janitor is counting. Sync."""
        wake = self._janitor_wake
        if wake is not None:
            wake.set()

    # --- scheduling (sync: called from the writer's on_commit) ---------------------------------

    def schedule(self, item: DeliveryItem) -> None:
        """Queue a committed delivery for its session. Never blocks, never drops."""
        lane = self.lanes.get(item.session_id)
        if lane is None:
            lane = self.lanes[item.session_id] = Lane(item.session_id)
        if item.binding is not None:  # written claimed: it is the lane's next delivery
            lane.reserved, lane.held = False, item
            self._ensure_running(lane)
            self._post(lane, WAKE)
            return
        if lane.overflow or self._sup is None or self.stopping:
            self._overflow(lane, item.seq)
            return
        self._ensure_running(lane)
        if not self._post(lane, item):
            self._overflow(lane, item.seq)

    def reserve(self, session_id: str) -> bool:
        """Reserve an idle session's lane for a delivery written already claimed. Sync.

        False when the session has anything queued, claimed or unrecorded (its next delivery
        must then wait its turn in the lane), or when dispatch is not running.
        """
        if self._sup is None or self.stopping or session_id in self._holds:
            return False
        lane = self.lanes.get(session_id)
        if lane is None:
            lane = self.lanes[session_id] = Lane(session_id)
        elif not lane.idle() or (lane.name is not None
                                 and self._sup.mailbox(lane.name).depth):
            return False
        lane.reserved = True
        return True

    def release(self, session_id: str) -> None:
        """The reserved delivery was not written after all."""
        lane = self.lanes.get(session_id)
        if lane is not None:
            lane.reserved = False
            if lane.name is None and not lane.has_work():  # reserve() made it: forget it
                del self.lanes[session_id]

    def wake(self, lane: Lane) -> None:
        """Make *lane* look at its state again (running it if it is not). Sync."""
        if self._sup is not None and not self.stopping:
            self._ensure_running(lane)
        self._post(lane, WAKE)

    def kick(self, session_id: str) -> None:
        """Make the session's lane read its ``queued`` rows from the store (recovery, rebinds).

        Its next refill starts from the session's first ``queued`` row, also one below what the
        lane already took (a row re-queued by reconcile keeps its old ``seq``). A row the lane
        has claimed and not yet handed to its route goes back behind them only if one older
        than it is ``queued`` now; otherwise (a stranded-row scan of a busy lane, rows newer
        than it re-queued) it goes out as claimed.
        """
        lane = self.lanes.get(session_id)
        if lane is None:
            lane = self.lanes[session_id] = Lane(session_id)
        lane.rewind = True
        lane.kicks += 1
        self._overflow(lane, 0)
        self._post(lane, WAKE)

    def _overflow(self, lane: Lane, seq: int) -> None:
        lane.overflow = True
        lane.max_seen = max(lane.max_seen, seq)
        if self._sup is not None and not self.stopping:
            self._ensure_running(lane)

    def _post(self, lane: Lane, message: object) -> bool:
        """Put *message* in the lane's mailbox if it has one with room (for a delivery, also
        within ``lane_bytes``, unless the lane holds none: one over the budget still goes)."""
        if lane.name is None or self._sup is None:
            return False
        item = isinstance(message, DeliveryItem)
        if item and lane.queued_bytes and lane.queued_bytes + message.size > self.lane_bytes:
            return False  # over the lane's byte budget: the outbox has it, as when it is full
        try:
            self._sup.mailbox(lane.name).send_nowait(message)
        except (trio.WouldBlock, MailboxClosedError):
            return False
        except TidingsError as exc:  # any other failed send (a fault plan): the outbox has it
            log.warning("event=lane_post_failed session=%s lane=%s error=%s",
                        field(lane.session_id), field(lane.name), field(repr(exc)))
            if lane.parked is not None:  # it may be waiting for this very message: nudge it
                lane.parked.cancel(reason="a post to this lane failed")
            return False
        if item:
            # Until the lane takes it, the lane is not idle, although its mailbox may look
            # empty: trio hands a message straight to a parked receiver, which runs later (a
            # fault may even take it then). A send written claimed meanwhile would overtake it.
            lane.posted += 1
            lane.queued_bytes += message.size
        return True

    def _ensure_running(self, lane: Lane) -> None:
        if lane.name is not None or self._sup is None:
            return
        lane.name = f"route:{lane.session_id}:{next(self._names)}"
        self._running += 1
        if self._idle.is_set():
            self._idle = trio.Event()
        self._sup.start_child_soon(ChildSpec(
            lane.name, functools.partial(self._worker.run, lane), restart="transient",
            shutdown_timeout=self.grace, start_timeout=None, mailbox_size=self.mailbox_size))

    def lane_exited(self, lane: Lane) -> None:
        """A lane's actor returned (idle, or stopping): forget it unless work is left.

        A lane of a ``routes`` incarnation :meth:`detach` has written off (its name cleared,
        the count of running lanes reset, its memory to be re-read) is not counted again:
        taken off, the count went below the lanes that run, and stop() could take the
        dispatcher for idle with a lane still delivering."""
        if lane.name is None:
            return
        lane.name = None
        self._running -= 1
        if not lane.has_work():
            self.lanes.pop(lane.session_id, None)
        if self._running == 0:
            self._idle.set()

    # --- stopping ------------------------------------------------------------------------------

    async def stop(self) -> None:
        """Stop taking work: idle lanes go at once, as do lanes waiting for room in an ack
        window or for a hold to end (they claimed nothing); a lane whose claimed row waits for a
        hold to end (its ``deliver()`` not started) sends it back to ``queued`` first (written
        within the grace: delivered after the next start); busy ones finish their current
        delivery, up to ``grace`` seconds, then are cancelled (a ``deliver()`` cut short, or a
        send-back not written by then, leaves its row ``sending``: ``unknown`` at the next
        start). Queued rows stay queued for the next start. Always a checkpoint."""
        self.stopping = self._stopped = True
        for lane in self.lanes.values():
            if lane.scope is not None and (lane.idle_since is not None or lane.waiting):
                lane.scope.cancel(reason="shutdown: idle lane")
            elif lane.holding is not None:  # its claimed row goes back to queued first
                lane.holding.cancel(reason="shutdown: the claimed row goes back")
        with trio.move_on_after(self.grace):
            await self._idle.wait()
        for lane in self.lanes.values():
            if lane.scope is not None:
                lane.scope.cancel(reason="shutdown: the runtime is stopping")
        await trio.lowlevel.checkpoint()

    def statistics(self) -> DispatchStatistics:
        lanes = self.lanes.values()
        return DispatchStatistics(
            lanes=len(self.lanes), running=self._running,
            overflowing=sum(lane.overflow for lane in lanes), delivered=self.counts["delivered"],
            failed=self.counts["failed"], unrouted=self.counts["unrouted"],
            queued_bytes=sum(lane.queued_bytes for lane in lanes),
            unacked_bytes=sum(lane.unacked_bytes for lane in lanes))

    def lane(self, session_id: str) -> Lane | None:
        return self.lanes.get(session_id)

    def settled(self, session_id: str) -> bool:
        """Whether nothing of *session_id* is in dispatch's hands: it has no lane, or an idle
        one (nothing queued, claimed, being recorded, unacked or reserved, no ``unrouted``
        write in flight) and no hold. A row written from now on looks its route up when its
        lane takes it. Sync. For a channel that unbinds the sessions it is done with."""
        if session_id in self._holds:
            return False
        lane = self.lanes.get(session_id)
        return lane is None or (lane.idle() and not lane.has_work() and not lane.waiting
                                and lane.unrouting is None)

    # --- acknowledgements (routes with an ack window) ------------------------------------------

    async def confirm(self, delivery_ids: Iterable[str]) -> list[str]:
        """Record ``sent`` for deliveries an acking route's client acknowledged.

        Accepts rows still ``sending`` (unacked) or already ``unknown`` (a dropped connection
        or a restart); returns the ids that moved. Frees room in their lanes' ack windows.
        Always a checkpoint. Raises as :func:`check_delivery_ids` does.
        """
        ids = check_delivery_ids(delivery_ids)
        if not ids:
            await trio.lowlevel.checkpoint()
            return []
        now = self.store.clock()
        moved: list[str] = []

        def on_commit(results: list[Any]) -> None:  # also when the caller has gone
            moved.extend(delivery_id for delivery_id, result in zip(ids, results, strict=True)
                         if result.applied)
            self._settle_unacked(moved, "delivered")

        await self.store.commit([transition(
            delivery_id, "sent", now=now, only_from=("sending", "unknown"))
            for delivery_id in ids], on_commit=on_commit)
        return moved

    async def abandon_unacked(self, session_id: str, *,
                              keep: Collection[str] = ()) -> list[str]:
        """The acking route of *session_id* lost its connection: its unacked rows become
        ``unknown`` (the client may or may not have them; it resolves them when it returns).
        Those in *keep* stay unacked (another connection still open was sent them and may
        ack them). Returns their ids. A row whose ``deliver()`` is still running is not
        unacked yet and is left to that call: it is ``failed`` if the call raises, else
        unacked once it returns (a later call makes it ``unknown``). An unacked row someone
        else moved first (an operator's ``failed``, an ack whose answer was lost) leaves the
        lane too, its handle resolved as the store says it ended: left unacked and
        unresolved, its ``wait()`` ended only at stop. A call cut off once its write was
        handed over leaves that to the lane (the write may still commit). Always a checkpoint.
        Raises :class:`ValidationError` naming ``session_id`` if it is not a non-empty
        string, and ``keep`` for a lone string (it would be read as its characters, and
        keep none) or an id in it that is not a non-empty string."""
        lane = self.lanes.get(check_session_id("session_id", session_id))
        keep = frozenset(check_id_list("keep", keep, "delivery ids", max_chars=None))
        ids = [delivery_id for delivery_id in lane.unacked
               if delivery_id not in keep] if lane is not None else []
        if not ids:
            await trio.lowlevel.checkpoint()
            return []
        now = self.store.clock()
        moved: list[str] = []

        def on_commit(results: list[Any]) -> None:  # also when the caller has gone
            moved.extend(delivery_id for delivery_id, result in zip(ids, results, strict=True)
                         if result.applied)
            self._settle_unacked(moved, "unknown")
            # The rest moved on before this write (not ``sending`` now): they stay unacked
            # until the store says where they ended. Handed to the lane too, here: a caller
            # cut off from now on (or already) leaves them to it, not to the next call.
            applied = set(moved)
            ended = [lane.unacked[delivery_id] for delivery_id in ids
                     if delivery_id not in applied and delivery_id in lane.unacked
                     and lane.unacked[delivery_id] not in lane.moved_on]
            if ended:
                lane.moved_on.extend(ended)
                self.wake(lane)
                lane.room()

        await self.store.commit([transition(
            delivery_id, "unknown", now=now, error="the client disconnected before acking")
            for delivery_id in ids], on_commit=on_commit)
        await self.settle_moved_on(lane)
        return moved

    async def settle_moved_on(self, lane: Lane) -> None:
        """Unacked rows of *lane* someone else moved first (``lane.moved_on``): each leaves the
        lane (if still there) and its handle ends as the row did, read from the store
        (``delivered`` for ``sent``), counted once; a row moved to no end (``queued`` again by
        ``rt.requeue``, or ``sending`` again since) ends ``unknown``, its first outcome: its
        client was sent it and never acked (``wait()`` must not wait for a delivery the lane
        makes again, with a fresh item: see ``LaneWorker._refill``). Run by an abandon and by
        the lane, which ever comes first: each takes a row before its read, and puts it back
        (waking the lane) if cut off during it."""
        while lane.moved_on:
            item = lane.moved_on.pop()
            try:
                await self._worker._resolve_durable([(item, "unknown")])
            except BaseException:
                lane.moved_on.append(item)
                self.wake(lane)
                lane.room()
                raise
            if item.status not in TERMINAL:
                self.resolve(item, "unknown")
            if lane.unacked.get(item.delivery_id) is item:
                del lane.unacked[item.delivery_id]
                lane.unacked_bytes -= item.size
                lane.room()

    def _settle_unacked(self, ids: list[str], status: str) -> None:
        """Rows *ids* moved to *status* (``delivered``: acked; ``unknown``: abandoned) leave
        their lanes' unacked sets, and their handles end so, counted once (also a row acked
        while its ``deliver()`` still ran: in no unacked set yet). Sync: run in
        ``on_commit``."""
        touched: set[str] = set()
        for delivery_id in ids:
            lane = self._acked_lane(delivery_id)
            if lane is None or (item := lane.unacked.pop(delivery_id, None)) is None:
                live = self.registry.get(delivery_id)
                if live is not None:
                    self.resolve(live, status)
                continue
            lane.unacked_bytes -= item.size
            self.resolve(item, status)
            touched.add(item.session_id)
        for session_id in touched:
            lane = self.lanes.get(session_id)
            if lane is not None:
                lane.room()

    def _rebound(self, session_id: str) -> None:
        """Router bind listener (sync): a lane waiting for room in the ack window looks at the
        new route's window (wider, or none), which only an ack would otherwise make it do.
        A bind to the route of an open :meth:`hold_binds` block holds the session."""
        binding = self.router.binding(session_id)
        for hold in self._binders:
            if (binding is not None and binding.route is hold.route
                    and session_id not in hold.sessions):
                hold.sessions.add(session_id)
                self._holds[session_id] += 1
                self._unheld.setdefault(session_id, trio.Event())
        lane = self.lanes.get(session_id)
        if lane is not None:
            lane.room()

    def _unbound(self, session_id: str) -> None:
        """Router unbind listener (sync): a lane waiting for room in the ack window finds no
        route now (its row is ``unrouted``), which only an ack would otherwise make it see."""
        lane = self.lanes.get(session_id)
        if lane is not None:
            lane.room()

    # --- holds: a binder hands older rows back first ------------------------------------------

    @contextlib.asynccontextmanager
    async def hold_binds(self, route: object) -> AsyncIterator[None]:
        """Hold every session bound to *route* while the block runs, until the block ends: its
        lane claims nothing (it waits before its claim) and no send of it is written claimed.

        For a binder that hands the session's older rows back after its bind (a gateway
        client's hello re-queues the ``unrouted`` ones, see :meth:`unrouted_written`): a row
        claimed for the new route in between went out before them. A lane that waited drops
        the row it had taken if rows were handed back meanwhile (a kick) and reads it again
        after them, in seq order. A row claimed before the hold began (for the route bound
        before, its platform I/O not started) waits for the block's end too, and if rows were
        handed back meanwhile goes back to ``queued`` and after them (``unknown`` then
        ``queued``, one write), written by the hand-back itself (:meth:`hand_back_claimed`), so
        before the block ends. Neither entering nor leaving waits.
        """
        hold = _BindHold(route)
        self._binders.append(hold)
        try:
            yield
        finally:
            self._binders.remove(hold)
            self.release_sessions(hold.sessions)

    def hold_sessions(self, session_ids: Iterable[str]) -> None:
        """Hold each session as :meth:`hold_binds` does, until :meth:`release_sessions` (one
        release per hold). Recovery holds the sessions whose ``queued`` rows it will hand to
        their lanes later (``recover="manual"``): a send written meanwhile must not go
        first. Sync."""
        for session_id in session_ids:
            self._holds[session_id] += 1
            self._unheld.setdefault(session_id, trio.Event())

    def release_sessions(self, session_ids: Iterable[str]) -> None:
        """End one hold of each session; a session no longer held claims again. Sync."""
        for session_id in session_ids:
            self._holds[session_id] -= 1
            if not self._holds[session_id]:
                del self._holds[session_id]
                self._unheld.pop(session_id).set()

    async def hand_back_claimed(self, session_id: str) -> bool:
        """Inside a hold, once a binder has handed rows of *session_id* back (``queued``): send
        the row its lane claimed and has not yet handed to a route (waiting for the hold's end,
        see :meth:`hold_binds`) back behind them too, if one of them is older, ``unknown`` then
        ``queued`` in one write. Done by the binder, before its hold ends, so no reader after
        the hold (a gateway hello's replay of ``sending`` rows) sees that row ``sending``: a
        replay that did wrote it to the client ahead of the older rows, and the client's ack,
        coming after the lane's own re-queue, confirmed nothing. The lane sees its row gone
        (``lane.current``, or ``lane.held`` for a row written claimed that it has not taken
        yet) and does not deliver it. False when nothing moved (no such row, or none older).

        No claim can still be in flight here: a lane hands its claim to the writer's mailbox
        in the step that finds the session unheld, and a send is written claimed only if
        :meth:`reserve` found it unheld, handed over with no schedule point between (a full
        mailbox queues senders in order), so any claim went in before the bind that holds the
        session; the binder's requeue goes in after that bind, and the writer answers in the
        order it was handed writes, so the claim has landed (``lane.claimed`` set in its
        ``on_commit``, ``lane.held`` in :meth:`schedule`) before the requeue returns."""
        lane = self.lanes.get(session_id)
        item = _unstarted(lane) if lane is not None else None
        if lane is None or item is None or self.unheld(session_id) is None:
            await trio.lowlevel.checkpoint()
            return False
        if not await self._worker._queued_below(lane, item) or _unstarted(lane) is not item:
            return False
        def on_commit(results: list[Any]) -> None:  # also when the caller has gone
            if not results[0].applied:
                return
            if lane.current is item:
                lane.current, lane.claimed = None, False
            elif lane.held is item:
                lane.held = None

        results = await self.store.commit(
            send_back(item.delivery_id, now=self.store.clock(), error=HANDED_BACK,
                      only_from=("sending",)), on_commit=on_commit)
        return bool(results[0].applied)

    def unstarted_seq(self, session_id: str) -> int | None:
        """The seq of the row *session_id*'s lane has claimed and not yet handed to its
        route's ``deliver()`` (written claimed and not taken yet, or waiting for a hold's end),
        None if none. That row has gone to no client yet: a gateway welcome counts it as still
        to come (``history_seq`` below it). Sync."""
        lane = self.lanes.get(session_id)
        item = _unstarted(lane) if lane is not None else None
        return item.seq if item is not None else None

    def unheld(self, session_id: str) -> trio.Event | None:
        """An event set when no :meth:`hold_binds` block holds the session; None if none does."""
        return self._unheld.get(session_id)

    async def unrouted_written(self, session_id: str) -> None:
        """Return once the session's lane has no ``unrouted`` write in flight: a row it found
        no route for just before a bind. A binder inside :meth:`hold_binds` waits for this
        before it reads the session's ``unrouted`` rows to hand them back, or it would miss
        that row (left ``unrouted``, and re-queued later, after newer rows). Always a
        checkpoint."""
        while True:
            lane = self.lanes.get(session_id)
            written = lane.unrouting if lane is not None else None
            if written is None:
                break
            await written.wait()
        await trio.lowlevel.checkpoint()

    def _acked_lane(self, delivery_id: str) -> Lane | None:
        item = self.registry.get(delivery_id)
        return self.lanes.get(item.session_id) if item is not None else None

    def resolve(self, item: DeliveryItem, status: str) -> None:
        """Record *item*'s terminal *status* (its first one wins), and count it once: an end
        may be reported twice (as its write commits, and by the lane that waited for it)."""
        if item.status not in TERMINAL:
            self.counts[status] += 1
        item.resolve(status)
        live = self.registry.get(item.delivery_id)
        if live is not None and live is not item:  # a handle built from the row meanwhile
            live.resolve(status)
