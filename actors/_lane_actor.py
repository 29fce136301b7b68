"""The lane actor: what one session's route actor does with its deliveries, one at a time.

For each delivery: claim it (``sending``, durable; written together with the previous
delivery's ``sent``), call the route, then record ``sent`` or ``failed``. A delivery written
already claimed (its session was idle) skips the claim. With no route bound, and none that
the router's resolvers bind when asked (``SessionInteractionRouter.resolve``), it is
``unrouted``.
An incarnation restarted after a crash first settles what the crashed one left: delivered rows
become ``sent``; the row it was handling becomes ``unknown`` if it was claimed (the platform may
have it) or ``failed`` if not — that message is not retried.

A write of the lane's own that the store refuses (:class:`StoreError`: a full disk, an I/O
error, a writer that died mid-batch) is no crash: the lane waits (0.1 s doubling to 30 s, no
restart counted against the supervisor's intensity) and settles as a restarted incarnation
would, except that the row whose claim did not commit goes back to ``queued``, not ``failed``:
the message was not at fault; so does a claimed row whose platform I/O had not begun (the
store refused a write handing it to a newly bound route, or sending it back), not
``unknown``. Before, a full disk made every lane crash and restart in a tight loop until the
supervisors gave up and the runtime stopped. A refusal while stopping (the one more try a stop
makes) ends the incarnation without a crash (``event=lane_store_error_at_stop``): what it could
not write is left as after any stop.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import trio

from tidings.actors._handle import TERMINAL, DeliveryItem, describe_error, outcome_of
from tidings.actors._outbound import adapt_blocks, build_outbound, item_from_row
from tidings.actors._router import Binding, RecipientAway
from tidings.errors import ConflictError, StoreClosedError, StoreError
from tidings.store import TERMINAL_STATUSES, InsertRows, Transition, queries, transition
from tidings.supervisor import Backoff, ChildContext, MailboxReceiver, Seam
from tidings.supervisor._backoff import BackoffTimer
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.actors._lanes import Dispatcher, Lane

__all__ = ["HANDED_BACK", "RETIRE", "WAKE", "LaneWorker", "send_back"]

_SENDING = ("sending",)

_PRUNABLE = ("sent", "failed")
"""The final states a prune deletes: a row gone had one of them (see _resolve_durable)."""

log = logging.getLogger("tidings.dispatch")

STORE_BACKOFF = Backoff(min=0.1, max=30.0)
"""How long a lane waits before it tries again after the store refused one of its writes."""

WAKE = object()
"""Mailbox signal: a delivery written already claimed is held for the lane."""

RETIRE = object()
"""Mailbox signal from the janitor: the lane has been idle for ``linger`` seconds."""

HANDED_BACK = "older rows were handed back before its platform I/O began"
"""The ``last_error`` of a claimed row sent back behind the older rows a binder handed back."""

_AWAY = "its route had nobody to take it before its platform I/O began"
"""The ``last_error`` of a claimed row whose route raised :class:`RecipientAway`."""


def send_back(delivery_id: str, *, now: float, error: str,
              only_from: tuple[str, ...] = ()) -> list[Transition]:
    """The moves that send a claimed row whose platform I/O never began back to ``queued``:
    ``unknown`` (with *error*; only from *only_from*, if given) then ``queued``, to be
    committed as one write (provably not on the platform, as a reconciling channel re-queues
    a row). The lane's own send-back and a binder's hand-back both write these."""
    return [transition(delivery_id, "unknown", now=now, error=error, only_from=only_from),
            transition(delivery_id, "queued", now=now, only_from=("unknown",))]


class LaneWorker:
    """Runs lane incarnations for a :class:`Dispatcher` (one worker serves every lane)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher
        self.store = dispatcher.store
        self.router = dispatcher.router

    async def run(self, lane: Lane, ctx: ChildContext, *,
                  task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """One incarnation of *lane*'s actor (a kernel child function)."""
        task_status.started()
        if ctx.incarnation > 1:  # restarted after a crash
            lane.forget_memory()
        with trio.CancelScope() as scope:
            lane.scope = scope
            try:
                await self._run(lane, ctx.mailbox)
            finally:
                lane.scope, lane.delivering, lane.idle_since = None, False, None
                lane.waiting, lane.holding = False, None
        # Returned (idle, or stopping). No checkpoint since the last look at the mailbox.
        self.dispatcher.lane_exited(lane)

    async def _run(self, lane: Lane, mailbox: MailboxReceiver) -> None:
        """Settle, then serve; after a write the store refused, wait and do both again."""
        timer: BackoffTimer | None = None
        while True:
            if lane.reread:
                _drain(mailbox)
                lane.reread, lane.posted, lane.queued_bytes = False, 0, 0
            started = trio.current_time()
            try:
                await self._settle(lane)
                await self._serve(lane, mailbox)
                return
            except StoreError as exc:
                # A conflict is a bug, a closed store a stop: those end the incarnation.
                if isinstance(exc, ConflictError | StoreClosedError):
                    raise
                error = exc
            if lane.current is not None and not lane.claimed:
                lane.unclaimed = True  # its claim did not commit (or may not have)
            lane.delivering, lane.waiting = False, False
            lane.forget_memory()  # as after a crash: what is in memory is read again
            if self.dispatcher.stopping:
                # That was the one more try a stop makes. What it could not write is left as
                # after any stop (queued rows queued, a delivered row ``sending``): the
                # incarnation ends, not crashes. Raised, the supervisor restarted it, its
                # settle was refused again, and so on until ``routes`` gave up.
                log.warning("event=lane_store_error_at_stop session=%s error=%s",
                            field(lane.session_id), field(describe_error(error, 300)))
                return
            timer = timer or BackoffTimer(STORE_BACKOFF)
            delay = timer.next_delay(trio.current_time() - started)
            log.warning("event=lane_store_error session=%s retry_in=%.2f error=%s",
                        field(lane.session_id), delay, field(describe_error(error, 300)))
            with trio.CancelScope() as lane.holding:  # stop() ends the wait, not the lane
                await trio.sleep(delay)
            lane.holding = None

    async def _serve(self, lane: Lane, mailbox: MailboxReceiver) -> None:
        dispatcher = self.dispatcher
        while True:
            if lane.held is not None:  # claimed already: delivered even while stopping
                item, lane.held = lane.held, None
                await self._process(lane, item)
                continue
            item = None if dispatcher.stopping else self._next_nowait(lane, mailbox)
            if item is not None:
                await self._process(lane, item)
                continue
            if lane.unflushed:
                if lane.reflush or dispatcher.stopping or not self._flush_behind(lane):
                    lane.reflush = False
                    await self._flush(lane)
                continue
            if lane.overflow and not dispatcher.stopping:
                await self._refill(lane)
                continue
            if lane.moved_on:  # an abandon cut off left them (Dispatcher.settle_moved_on)
                await dispatcher.settle_moved_on(lane)
                continue
            if dispatcher.stopping:
                return
            message = await self._park(lane, mailbox)
            if message is RETIRE:
                try:
                    message = _taken(lane, mailbox.receive_nowait())
                except (trio.WouldBlock, trio.EndOfChannel):
                    if not lane.has_work():
                        return
                    continue
            if isinstance(message, DeliveryItem) and not lane.rewind:
                await self._process(lane, message)

    async def _park(self, lane: Lane, mailbox: MailboxReceiver) -> object:
        """Wait for the next message (nothing to do until then); ``None`` when the wait was
        nudged (a post to this lane failed) or the mailbox closed: look at the lane again."""
        lane.idle_since = trio.current_time()
        self.dispatcher.lane_parked()
        # Only a fault plan makes a post fail in a way that needs a nudge: without one, park
        # with no cancel scope (one fewer scope per delivery on the hot path).
        sup = self.dispatcher.supervisor
        nudgeable = sup is not None and sup.fault_plan is not None
        with trio.CancelScope() if nudgeable else contextlib.nullcontext() as parked:
            lane.parked = parked
            try:
                return _taken(lane, await mailbox.receive())
            except trio.EndOfChannel:  # the shutdown ladder closed the mailbox
                self.dispatcher.stopping = True
            finally:
                lane.idle_since = lane.parked = None
        return None

    def _next_nowait(self, lane: Lane, mailbox: MailboxReceiver) -> DeliveryItem | None:
        """The next delivery in memory (mailbox, then backlog). After a kick (``rewind``: rows
        below them were re-queued) none: what is in memory is dropped, as those rows are
        ``queued`` in the store and the refill from the session's first ``queued`` row reads
        them again, in seq order after the re-queued ones; taken now, they would overtake
        them (a reconnecting gateway client got seq 5, 6, then 3, 4)."""
        while True:
            try:
                message = _taken(lane, mailbox.receive_nowait())
            except trio.WouldBlock:
                break
            except trio.EndOfChannel:  # the shutdown ladder closed the mailbox
                self.dispatcher.stopping = True
                return None
            if isinstance(message, DeliveryItem) and not lane.rewind:
                return message
        if lane.rewind:
            lane.queued_bytes -= sum(item.size for item in lane.backlog)
            lane.backlog.clear()
            return None
        if not lane.backlog:
            return None
        item = lane.backlog.popleft()
        lane.queued_bytes -= item.size
        return item

    async def _refill(self, lane: Lane) -> None:
        target = lane.max_seen
        if lane.rewind:  # nothing is in memory now (refills wait for an empty backlog)
            lane.cursor, lane.rewind = 0, False
        rows = await self.store.read(functools.partial(
            queries.open_outbox_rows, after_seq=lane.cursor, limit=self.dispatcher.refill_batch,
            max_size=self.dispatcher.lane_bytes - lane.queued_bytes), lane.session_id)
        registry = self.dispatcher.registry
        for row in rows:
            live = registry.get(row.delivery_id)
            if live is not None and lane.unacked.get(row.delivery_id) is live:
                # Unacked, and re-queued meanwhile (moved to ``unknown`` and handed back by
                # someone else): it left the ack window; its handle ends ``unknown`` (sent,
                # never acked), and its delivery again is a fresh item, unacked afresh.
                del lane.unacked[row.delivery_id]
                lane.unacked_bytes -= live.size
                self.dispatcher.resolve(live, "unknown")
            # Registered: a repeated key or an ack finds this very item. Unless it has ended
            # (a re-queued row, delivered again): a fresh item, or its old outcome would pass
            # for an ack that came while deliver() ran, and the row would never join the
            # ack window (nor be abandoned with it).
            if live is None or live.status in TERMINAL:
                live = item_from_row(row)
                registry.add(live)
            elif not live.seq:  # its send has not heard of its commit yet: same delivery
                live.seq = row.seq
            lane.backlog.append(live)
            lane.queued_bytes += live.size
        if not rows:
            lane.cursor = max(lane.cursor, target)
            # A kick while the read ran (``rewind`` set again) may have re-queued rows the
            # read missed: read again. Left off, the rewind would drop every later delivery
            # posted to the lane, and nothing would read them.
            if lane.cursor >= lane.max_seen and not lane.rewind:
                lane.overflow = False

    async def _process(self, lane: Lane, item: DeliveryItem) -> None:
        lane.cursor = max(lane.cursor, item.seq)
        if item.binding is not None:  # claimed as it was written, for the route bound then
            binding, attempt = item.binding, 1
            lane.current, lane.claimed = item, True
            item.binding = None
            if lane.unflushed:
                await self._flush(lane)
        else:
            # Taken but not yet claimed: the lane is not idle, so no send is written claimed
            # past this one (or past the ack window) while it waits.
            lane.taking = True
            try:
                await self.router.resolve(item.session_id)  # unbound: a resolver may bind it
                await self._wait_for_window(lane, item)
                claimed = await self._claim(lane, item)
            finally:
                lane.taking = False
            if claimed is None:
                return
            binding, attempt = claimed
        # The last bind wins: a re-bind while the claim was written (or, for a row claimed as
        # it was written, before the lane took it) replaced the route the claim read, and
        # the platform I/O has not started. With no route left, the claimed one still gets
        # it (``sending`` cannot become ``unrouted``), as would a deliver() already running.
        live = self.router.binding(item.session_id) or binding
        if live is not binding or lane.rewind \
                or self.dispatcher.unheld(item.session_id) is not None:
            try:  # free when nothing is raised: no per-delivery work
                handed = await self._handing_to(lane, item, binding)
            except StoreError as exc:  # one the lane waits out (see _run): the claimed row
                if not isinstance(exc, ConflictError | StoreClosedError):  # never reached a
                    lane.unclaimed = True  # route: back in line, as a claim not committed is
                raise
            if handed is None:
                return
            live = handed
        binding = live
        outbound, _ = build_outbound(item, binding.capabilities, attempt=attempt)
        lane.delivering = True
        sup = self.dispatcher.supervisor
        if sup is not None and sup.fault_plan is not None and lane.name is not None:
            sup.fault_point(lane.name, Seam.DELIVER)  # claimed: a crash here leaves it unknown
        try:
            await binding.deliver(outbound)
        except RecipientAway as away:  # nobody there to take it: not a failure (see _away)
            lane.delivering = False
            await self._away(lane, item, requeue=away.requeue)
            return
        except Exception as exc:  # noqa: BLE001 - any error from a route is that delivery's failure
            lane.delivering = False
            failed = transition(item.delivery_id, "failed", now=self.store.clock(),
                                error=describe_error(exc))
            await self._commit(lane, [], [(item, failed)])
            lane.current = None
            return
        lane.delivering = False
        lane.current = None
        if binding.ack_window:  # stays ``sending`` until the client acks (Runtime.confirm)
            if item.status not in TERMINAL:  # not acked already, while deliver() ran
                lane.unacked[item.delivery_id] = item
                lane.unacked_bytes += item.size
        else:
            lane.unflushed.append(item)

    async def _still_next(self, lane: Lane, item: DeliveryItem) -> int | None:
        """Whether claimed *item* is still the session's next row, its platform I/O not yet
        started: the lane's kick count it was checked at, or None if it went back. A binder
        that began to hold the session after the claim was decided (a hello binding another
        route, see :meth:`Dispatcher.hold_binds`) hands older rows back: wait for its hold to
        end; if that or another kick (``rewind``) re-queued rows older than *item*, hand it
        back after them, ``unknown`` then ``queued`` in one write (provably not on the
        platform, as a reconciling channel re-queues a row), for the refill to read in seq
        order. Without this the newer row went out first, to the new route. A kick that
        re-queued nothing older (a stranded-row scan, rows newer than it) leaves it next. A
        stop (``dispatcher.stopping``; :meth:`Dispatcher.stop` ends the wait) sends it back
        too: never on the platform, it is ``queued`` for the next start, not ``unknown``."""
        while (unheld := self.dispatcher.unheld(lane.session_id)) is not None:
            if self.dispatcher.stopping:  # it never reached the platform: queued for next start
                await self._send_back(lane, item, "the runtime stopped before its platform "
                                                  "I/O began")
                return None
            with trio.CancelScope() as lane.holding:  # stop() ends the wait (not the lane)
                await unheld.wait()
            lane.holding = None
        if lane.current is not item:  # the binder sent it back (Dispatcher.hand_back_claimed)
            return None
        kicks = lane.kicks
        if not lane.rewind or not await self._queued_below(lane, item):
            return kicks
        await self._send_back(lane, item, HANDED_BACK)
        return None

    async def _send_back(self, lane: Lane, item: DeliveryItem, error: str, *,
                         only_from: tuple[str, ...] = ()) -> bool:
        """Claimed *item*, its platform I/O not started, goes back to ``queued``: ``unknown``
        (with *error*; only from *only_from*, if given) then ``queued`` in one write (provably
        not on the platform). Its handle is not resolved: the row is delivered later. False
        when someone else had moved the row on (its handle then reports where it ended)."""
        results = await self.store.commit(send_back(item.delivery_id, now=self.store.clock(),
                                                    error=error, only_from=only_from))
        lane.current, lane.claimed = None, False
        if not results[0].applied:  # someone else moved the row on: report where it ended
            await self._resolve_durable([(item, "unknown")])
            return False
        return True

    async def _away(self, lane: Lane, item: DeliveryItem, *, requeue: bool) -> None:
        """The route had nobody to take claimed *item* (:class:`RecipientAway`), its platform
        I/O never begun: back to ``queued`` (:meth:`_send_back`), then ``unrouted``, as a row
        that finds no route is (:meth:`_unroute`), for its channel to hand back when its
        recipient returns. Unless the route said *requeue* (older rows of the session were
        handed back while it ran), or a binder holds the session by then (``hold_binds``, or
        a gateway hello for a conversation whose rows went so): it may have read the
        ``unrouted`` rows it hands back already, and this one, left ``unrouted`` after that
        read, would wait for the next binder, behind newer rows; it stays ``queued`` and the
        lane reads the session's ``queued`` rows again (a kick), after the hold. From the
        raise on, a binder's ``unrouted_written`` waits for both writes."""
        lane.unrouting = away = trio.Event()
        try:
            if not await self._send_back(lane, item, _AWAY, only_from=_SENDING):
                return
            if requeue or self.dispatcher.unheld(item.session_id) is not None:
                self.dispatcher.kick(item.session_id)
                return
            await self._unroute(lane, item)
        except StoreError as exc:  # one the lane waits out (see _run): the claimed row never
            if not isinstance(exc, ConflictError | StoreClosedError) \
                    and lane.current is item:  # reached a route: back in line
                lane.unclaimed = True
            raise
        finally:
            if lane.unrouting is away:
                lane.unrouting = None
            away.set()

    async def _queued_below(self, lane: Lane, item: DeliveryItem) -> bool:
        """Whether the session has a ``queued`` row older than *item* (handed back). A lane's
        item always has its seq (>= 1): a send's item is scheduled only once its write
        committed and set it, and a refill sets it on a registered item that has not yet."""
        first = await self.store.read(functools.partial(
            queries.open_outbox_rows, after_seq=0, limit=1), lane.session_id)
        return bool(first) and first[0].seq < item.seq

    async def _handing_to(self, lane: Lane, item: DeliveryItem,
                          claimed: Binding) -> Binding | None:
        """The route to hand claimed *item* to, its platform I/O not yet started; None if it
        went back to ``queued`` (see :meth:`_still_next`). The last bind wins: if the route
        bound now renders it differently from *claimed* (the route the claim read), record a
        ``delivery.degraded`` event naming that route and the block types it lacks
        (``missing: []``: none; the claim's event named the replaced route). Each wait here
        (a hold's end, a read, that write) lets a binder begin to hold the session, kick it or
        re-bind it, so all are looked at again after it: a row handed on after a write
        without that look went out ahead of the rows a hold that began meanwhile handed back."""
        said = _degradation(item, claimed)
        checked = None  # the kick count at which the store showed *item* still next
        while True:
            if self.dispatcher.unheld(item.session_id) is not None \
                    or (lane.rewind and lane.kicks != checked):
                checked = await self._still_next(lane, item)
                if checked is None:
                    return None
                continue
            live = self.router.binding(item.session_id) or claimed
            says = _degradation(item, live)
            if says == said:
                return live
            data = says or {"missing": [], "route": type(live.route).__name__}
            await self.store.commit([InsertRows(
                "events", ("type", "session_id", "delivery_id", "data", "created_at"),
                (("delivery.degraded", item.session_id, item.delivery_id, json.dumps(data),
                  self.store.clock()),), key_index=None)])
            said = says

    async def _wait_for_window(self, lane: Lane, item: DeliveryItem) -> None:
        """With an acking route, at most ``ack_window`` rows of a session are unacked, and
        they hold at most ``lane_bytes`` (their sizes, as the lane counts what it queues):
        each is held, text and all, until its client acks it, so a client that never acks
        would otherwise hold ``ack_window`` texts of up to ``MAX_TEXT_BYTES`` in one lane.
        With none unacked a row always goes, however large (as a post to an empty lane)."""
        while True:
            binding = self.router.binding(item.session_id)
            if binding is None or not binding.ack_window or (
                    len(lane.unacked) < binding.ack_window
                    and (not lane.unacked_bytes
                         or lane.unacked_bytes + item.size <= self.dispatcher.lane_bytes)):
                return
            if lane.unflushed:
                await self._flush(lane)
                continue
            if lane.moved_on:  # unacked rows that ended: they hold room in the window
                await self.dispatcher.settle_moved_on(lane)
                continue
            lane.waiting = True  # stop() may end the wait at once
            try:
                await lane.window.wait()
            finally:
                lane.waiting = False

    async def _claim(self, lane: Lane, item: DeliveryItem) -> tuple[Binding, int] | None:
        """Claim *item* (``sending``, durable) for its session's route, with the previous
        delivery's ``sent`` in the same transaction. None: unrouted, or moved on already, or
        left ``queued`` for the refill (older rows were handed back while it waited), or for
        the next start (the runtime stops while the session is held: nothing to finish)."""
        while True:  # a flush in the background, or a hold (Dispatcher.hold_binds): claim after
            if lane.flushing is not None:
                await lane.flushing.wait()
                continue
            unheld = self.dispatcher.unheld(lane.session_id)
            if unheld is None:
                break
            if self.dispatcher.stopping:  # nothing claimed: it stays queued for the next start
                return None
            if lane.unflushed:  # record what was delivered first: stop() may cut this wait
                await self._flush(lane)
                continue
            lane.waiting = True  # stop() ends the wait at once, as for the ack window
            try:
                await unheld.wait()
            finally:
                lane.waiting = False
        if lane.rewind:  # older rows were handed back while it waited: it goes after them
            return None   # (still ``queued``: the refill from the first queued row reads it)
        binding = self.router.binding(item.session_id)
        if binding is None:
            await self._unroute(lane, item)
            return None
        now = self.store.clock()
        flushed = self._take_unflushed(lane)
        lane.current, lane.claimed = item, False
        degraded = _degradation(item, binding)
        extra = [("delivery.degraded", degraded)] if degraded else []
        claim = transition(item.delivery_id, "sending", now=now, claimant=self.store.claimant,
                           lease_expires_at=now + self.dispatcher.lease, extra_events=extra)

        def landed(results: object) -> None:
            # Sync, in the writer's task as the claim commits, before any task that commit
            # wakes runs: a binder's hand-back woken by the same batch (hand_back_claimed)
            # must see the row claimed, or it skips it as a claim in flight and a replay
            # after the hold reads it ``sending`` (the race 7635166 closed).
            if isinstance(results, list) and results and results[-1].applied \
                    and lane.current is item:
                lane.claimed = True

        applied = await self._commit(lane, flushed, [(item, claim)], ended=landed)
        if not applied:  # someone else already moved this row on
            lane.current = None
            # Its handle reports where the row ended (gone: "unknown", see _resolve_durable).
            await self._resolve_durable([(item, "unknown")])
            return None
        if lane.current is not item:  # a binder's hand-back sent it back as it landed
            return None  # (``queued``: the refill reads it after the older rows)
        lane.claimed = True
        return binding, applied[0]

    async def _unroute(self, lane: Lane, item: DeliveryItem) -> None:
        """Record ``queued`` *item* ``unrouted`` (with the delivered rows' ``sent``): no
        route has it, or its route had nobody to take it (:meth:`_away`)."""
        lane.unrouting = written = trio.Event()  # see Dispatcher.unrouted_written

        def ended(results: object) -> None:
            # When the write has ended, not when this lane stops waiting for it: a lane
            # that crashes meanwhile leaves it in the writer, and a binder reading the
            # ``unrouted`` rows before it commits would miss this one. Its handle is
            # resolved here too: such a lane's restart finds the row neither ``queued``
            # (read again) nor its current row (settled), and its waiters waited for good.
            if lane.unrouting is written:
                lane.unrouting = None
            written.set()
            if isinstance(results, list) and results and results[-1].applied:
                self.dispatcher.resolve(item, "unrouted")

        try:
            await self._commit(lane, self._take_unflushed(lane), [(item, transition(
                item.delivery_id, "unrouted", now=self.store.clock()))], ended=ended)
        except StoreError as exc:  # one the lane waits out (see _run): it may have
            if not isinstance(exc, ConflictError | StoreClosedError):  # committed all the
                # same, and the lane reads back only ``queued`` rows: made its current,
                # unclaimed, the settle reads it (``unrouted``: resolved) or leaves it
                # ``queued`` for the refill, as after a claim the store refused.
                lane.current, lane.claimed = item, False
            raise

    async def _flush(self, lane: Lane) -> None:
        await self._commit(lane, self._take_unflushed(lane), [])

    def _flush_behind(self, lane: Lane) -> bool:
        """Record ``sent`` for the delivered rows without waiting: the lane has nothing else
        to do, and its sender waits for the commit, not for the lane. Sync.

        The lane claims nothing more until the write has ended (:meth:`_claim` waits for
        ``lane.flushing``), so a session still has at most one ``sending`` row. If the write
        fails, or a row had moved on, the rows go back to ``unflushed`` and the lane is woken
        to flush them in the foreground. False (nothing taken) when the writer's mailbox is
        full.
        """
        moves = self._take_unflushed(lane)
        ended = trio.Event()
        dispatcher = self.dispatcher

        def settle(back: list[DeliveryItem]) -> None:
            lane.committing -= 1
            lane.flushing = None
            ended.set()
            if back:
                lane.unflushed[:0] = back
                lane.reflush = True
                dispatcher.wake(lane)

        def committed(results: list[Any]) -> None:
            back = []
            for (item, _), result in zip(moves, results, strict=True):
                if result.applied:
                    dispatcher.resolve(item, "delivered")
                else:  # moved on: the foreground flush reads what it became
                    back.append(item)
            settle(back)

        try:
            self.store.commit_nowait([move for _, move in moves], on_commit=committed,
                                     on_error=lambda _: settle([item for item, _ in moves]))
        except trio.WouldBlock:
            lane.unflushed[:0] = [item for item, _ in moves]
            return False
        except BaseException:  # a fault at the mailbox: the rows stay the lane's to record
            lane.unflushed[:0] = [item for item, _ in moves]
            raise
        lane.committing += 1
        lane.flushing = ended
        return True

    def _take_unflushed(self, lane: Lane) -> list[tuple[DeliveryItem, Transition]]:
        if not lane.unflushed:
            return []
        now = self.store.clock()
        # Built directly: the one move a lane records after a delivery, legal by construction.
        moves = [(item, Transition(item.delivery_id, "sent", now, only_from=_SENDING))
                 for item in lane.unflushed]
        lane.unflushed = []
        return moves

    async def _commit(self, lane: Lane, before: list[tuple[DeliveryItem, Transition]],
                      moves: list[tuple[DeliveryItem, Transition]], *,
                      ended: Callable[[object], None] | None = None) -> list[int]:
        """Commit *before* + *moves* in one transaction; resolve items whose move applied.

        Returns the attempt counts of the applied *moves*. If the write fails, the items of
        *before* go back to ``unflushed`` (their delivery already happened). *ended* (sync)
        runs once the write has committed or will not, also if this caller has gone.
        """
        pairs = before + moves
        lane.committing += 1
        try:
            results = await self.store.commit([move for _, move in pairs], on_commit=ended,
                                              on_error=ended)
        except BaseException:
            lane.unflushed[:0] = [item for item, _ in before]
            raise
        finally:
            lane.committing -= 1
        attempts = []
        moved_on = []
        for index, ((item, move), result) in enumerate(zip(pairs, results, strict=True)):
            if not result.applied:
                if move.to in TERMINAL_STATUSES:
                    moved_on.append((item, outcome_of(move.to) if move.to in _PRUNABLE
                                         else "unknown"))
                continue
            if index >= len(before):
                attempts.append(result.attempts)
            if move.to in TERMINAL_STATUSES:
                self.dispatcher.resolve(item, outcome_of(move.to))
        if moved_on:
            try:
                await self._resolve_durable(moved_on)
            except BaseException:  # delivered rows not resolved yet stay the lane's to settle
                done = {id(item) for item, _ in moved_on if item.status in TERMINAL}
                waiting = [item for item, _ in moved_on]
                lane.unflushed[:0] = [item for item, _ in before
                                      if id(item) not in done and item in waiting]
                raise
        return attempts

    async def _resolve_durable(self, items: list[tuple[DeliveryItem, str]]) -> None:
        """Rows a move of the lane's found moved on already (say, a write whose answer a crash
        cut off committed after all): resolve their items with the durable terminal state.

        Each item comes with the outcome to report if its row is gone. Only a prune deletes a
        row, and only a final one (``sent``, ``failed``: :data:`_PRUNABLE`), so it ended:
        left unresolved, its ``handle.wait()`` waited for good (nothing reads it again).
        Which of the two it was, nothing can tell any more. When the lane's own move was
        ``sent`` or ``failed``, that move is what most likely committed: the usual way such a
        move finds its row moved on is that the lane's own earlier write of it committed
        under an answer that said it may not have (a writer killed between its commit and
        its answer), and the lane wrote it again. Any other move (a claim, a send-back,
        ``unrouted``, a settle's ``unknown``) cannot be what the row ended as:
        ``"unknown"`` (the platform may have it), never a ``"delivered"`` or ``"failed"``
        the lane did not write. Logged (``delivery_row_gone``), as the guess it is."""
        for item, if_gone in items:
            found = await self.store.read(queries.delivery, item.delivery_id)
            if found is None:
                if item.status not in TERMINAL:
                    log.warning("event=delivery_row_gone session=%s delivery=%s outcome=%s",
                                field(item.session_id), field(item.delivery_id), if_gone)
                self.dispatcher.resolve(item, if_gone)
            elif found.outbox_status in TERMINAL_STATUSES:
                self.dispatcher.resolve(item, outcome_of(found.outbox_status))

    async def _settle(self, lane: Lane) -> None:
        """Close what a crashed incarnation left (see the module docstring). It stays in the
        lane until that is durable: if this write fails too, the next incarnation settles it."""
        now = self.store.clock()
        moves = []
        current = lane.current
        if current is not None and not lane.unclaimed:  # (that one is sent back below)
            if lane.claimed:
                moves.append((current, transition(
                    current.delivery_id, "unknown", now=now,
                    error="the session route crashed while delivering")))
            else:
                moves.append((current, transition(
                    current.delivery_id, "failed", now=now,
                    error="the session route crashed before delivering")))
        flushed = self._take_unflushed(lane)
        if flushed or moves:
            await self._commit(lane, flushed, moves)  # on failure, flushed is put back
        if current is not None and lane.unclaimed:
            # The store refused a write before its platform I/O (its claim, or one handing
            # it to its route): back in line, not failed or unknown. Written apart: through
            # _commit its ``unknown`` would resolve its handle so as the row went back.
            await self._send_back(lane, current, only_from=_SENDING, error=(
                "the store refused a write of its lane before its platform I/O"))
        lane.current, lane.unclaimed = None, False


def _degradation(item: DeliveryItem, binding: Binding) -> dict[str, Any] | None:
    """What a ``delivery.degraded`` event says of *item* handed to *binding*'s route: the
    block types it cannot render (sent as their text fallback) and the route's class; None
    when it renders every block."""
    _, missing = adapt_blocks(item.blocks, binding.capabilities)
    return {"missing": missing, "route": type(binding.route).__name__} if missing else None


def _taken(lane: Lane, message: object) -> object:
    """*message*, just taken from *lane*'s mailbox: a delivery is the lane's now (sync, so no
    send is written claimed between the take and :meth:`LaneWorker._process`)."""
    if isinstance(message, DeliveryItem) and lane.posted:
        lane.posted -= 1
        lane.queued_bytes -= message.size
    return message


def _drain(mailbox: MailboxReceiver) -> None:
    """Drop what is buffered: those rows are durable and will be re-read in order."""
    while True:
        try:
            mailbox.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel):
            return
