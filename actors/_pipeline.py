"""The delivery pipeline: one validated request becomes one durable transaction.

Every send writes, in one transaction (group-committed with its neighbours): the outbox row
(``queued``, owned by the turn through ``owner_turn_id``, with the next per-session ``seq``), a
``delivery.send`` work item (its own id; no parent work id), the history row when the policy
writes history, and the artifact records. Only after the commit — in the writer's ``on_commit``,
so even a caller cancelled while waiting cannot strand it — is the delivery scheduled.
"""

from __future__ import annotations

import collections
import functools
import itertools
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import trio

from tidings.actors._blocks import MAX_SEND_BYTES, ContentBlock
from tidings.actors._handle import (
    TERMINAL,
    DeliveryHandle,
    DeliveryItem,
    HandleRegistry,
    outcome_of,
)
from tidings.actors._lane_actor import send_back
from tidings.actors._lanes import Dispatcher
from tidings.actors._outbound import adapt_blocks, item_from_row
from tidings.actors._router import Binding, SessionInteractionRouter
from tidings.errors import ConflictError, StoreClosedError, StoreError, ValidationError
from tidings.store import (
    OUTBOX_STATUSES,
    TERMINAL_STATUSES,
    TRANSITIONS,
    DeliveryStatus,
    EnqueuedDelivery,
    InsertRows,
    Op,
    OutboxInsert,
    OutboxRow,
    Store,
    queries,
    release_inbound,
)
from tidings.store._records import held_size

__all__ = ["ArtifactRecord", "DeliveryPipeline", "DeliveryRequest", "new_id"]

_WORK_COLUMNS = ("work_id", "kind", "subject_id", "parent_work_id", "status", "claimant",
                 "lease_expires_at", "attempts", "created_at", "updated_at")
_MESSAGE_COLUMNS = ("message_id", "session_id", "turn_id", "delivery_id", "role", "kind", "text",
                    "policy", "visible", "model_visible", "created_at", "updated_at")
_ARTIFACT_COLUMNS = ("artifact_id", "session_id", "owner_turn_id", "delivery_id", "block_type",
                     "source_kind", "location", "name", "media_type", "summary", "metadata",
                     "created_at")


_UNCERTAIN_CLAIM = ("its write, claimed, was answered with an error though it committed (the "
                    "writer could not tell): sent back before its platform I/O began")
"""The ``last_error`` of such a row sent back (:meth:`DeliveryPipeline._may_have_committed`)."""

_PROCESS_TAG = os.urandom(5).hex()
_SERIAL = itertools.count()


def new_id(prefix: str) -> str:
    """``<prefix>_<12 hex ms time><10 hex per-process random><6 hex serial>``.

    Unique across processes (the random tag) and within one (the serial), and ordered by
    creation time, so primary-key B-trees grow at their right edge instead of everywhere.
    """
    return (f"{prefix}_{time.time_ns() // 1_000_000:012x}{_PROCESS_TAG}"
            f"{next(_SERIAL) & 0xFFFFFF:06x}")


def _new_ids(*prefixes: str) -> list[str]:
    """:func:`new_id` for several prefixes at once, reading the clock once (a send needs three)."""
    stamp = f"{time.time_ns() // 1_000_000:012x}{_PROCESS_TAG}"
    return [f"{prefix}_{stamp}{next(_SERIAL) & 0xFFFFFF:06x}" for prefix in prefixes]


def _blocks_json(blocks: tuple[ContentBlock, ...]) -> str:
    if len(blocks) == 1 and blocks[0].type == "text":  # the common case, without a dict
        return '[{"type": "text", "text": ' + json.dumps(blocks[0].text) + "}]"  # type: ignore[union-attr]
    return json.dumps([block.as_dict() for block in blocks])


def _check_stored_size(blocks: str, metadata: str, artifacts: Sequence[str]) -> None:
    """Refuse, naming ``blocks``, a send that would store more than :data:`MAX_SEND_BYTES`
    of JSON (its blocks', its metadata's and its artifacts' metadata's, as written: ASCII).
    Each part has its own cap, but not their number; such a send could never go out whole."""
    size = len(blocks) + len(metadata) + sum(map(len, artifacts))
    if size > MAX_SEND_BYTES:
        raise ValidationError("blocks", f"are {size} bytes as stored (the JSON of the blocks,"
                                        " their text escaped, of delivery_metadata and of the "
                                        "artifacts' metadata),"
                                        f" over the limit of {MAX_SEND_BYTES} (MAX_SEND_BYTES);"
                                        " send large content as files")


@attrs.frozen
class ArtifactRecord:
    """A host-owned artifact written with its delivery."""

    artifact_id: str
    block_type: str
    source_kind: str
    location: str
    name: str
    media_type: str | None
    summary: str | None
    metadata: Mapping[str, Any]


@attrs.frozen
class DeliveryRequest:
    """A fully validated send, ready to be written."""

    session_id: str
    turn_id: str | None
    kind: str
    blocks: tuple[ContentBlock, ...]
    text: str
    channel: str | None
    policy: str
    visible: bool
    history_text: str | None
    history_kind: str
    metadata: Mapping[str, Any]
    failure_history_text: str | None = None
    idempotency_key: str | None = None
    artifacts: Sequence[ArtifactRecord] = ()
    releases: Sequence[str] = ()
    """Held inbound messages this delivery tells about (a "not answered" notice): released in
    the same transaction, so a crash leaves them either held or told, never both."""


class _KeyedSend:
    """A send with an idempotency key whose write is in flight. Later sends of the key wait
    until it is decided, and share its delivery if it committed."""

    __slots__ = ("committed", "decided", "item", "key")

    def __init__(self, item: DeliveryItem, key: str) -> None:
        self.item = item
        self.key = key
        self.committed = False
        self.decided = trio.Event()

    def decide(self, *, committed: bool) -> None:
        """Record the outcome once (sync); the first decision wins."""
        if not self.decided.is_set():
            self.committed = committed
            self.decided.set()


class DeliveryPipeline:
    """Writes delivery intents and schedules them once durable.

    When the session is idle (no delivery of it queued, in flight or being written) and a
    route is bound, the intent is written already claimed (``sending``) for that route: the
    claim is then still the last durable write before the row's own platform I/O, and an idle
    session's delivery costs two commits instead of three.
    """

    def __init__(self, store: Store, dispatcher: Dispatcher, registry: HandleRegistry,
                 router: SessionInteractionRouter) -> None:
        self._store = store
        self._dispatcher = dispatcher
        self._registry = registry
        self._router = router
        self._pending_keys: dict[tuple[str, str], _KeyedSend] = {}
        self._writing: collections.Counter[str] = collections.Counter()
        # delivery_id -> created_at of each send whose write is in flight (see floor_time)
        self._unwritten: dict[str, float] = {}

    async def enqueue(self, request: DeliveryRequest,
                      check: Callable[[], None] | None = None) -> DeliveryHandle:
        """Write *request*; return its handle once the intent is durable.

        With an ``idempotency_key`` already used in the session, return the original delivery
        and write nothing but the release of the held messages it ``releases`` (that delivery,
        durable already, answered them). *check* (sync) runs after the last await before the
        write and may raise to refuse it: the caller's turn may have ended while the key was
        looked up.
        Raises :class:`StoreError` subclasses if the write fails.
        """
        key = request.idempotency_key
        session_id = request.session_id
        if key is not None:
            existing = await self._existing(session_id, key)
            if existing is not None:
                return await self.answered_by(existing, request.releases)
        if check is not None:
            check()
        # No checkpoint from here to the registration of the key: a concurrent send of the
        # same key finds this one pending and waits for it instead of writing a second row.
        now = self._store.clock()
        item, ops = self._build(request, now)
        if request.visible:  # before the commit: a lane may read the row before on_commit runs
            self._registry.add(item)
        keyed = None
        if key is not None:
            keyed = self._pending_keys[(session_id, key)] = _KeyedSend(item, key)
        self._writing[session_id] += 1
        self._unwritten[item.delivery_id] = now

        # The write's outcome settles the session's bookkeeping, not the caller's: a caller
        # cancelled while the write is in flight leaves it to commit (and be delivered) or fail.
        def on_commit(results: list[Any]) -> None:
            self._written(session_id)
            del self._unwritten[item.delivery_id]
            self._committed(item, request.visible, results[0])
            if keyed is not None:
                self._decide(session_id, keyed, committed=True)

        def on_error(error: BaseException) -> None:
            self._registry.discard(item)
            if request.visible and not isinstance(error, ConflictError | StoreClosedError):
                self._may_have_committed(session_id, item)
            self._written(session_id)
            del self._unwritten[item.delivery_id]
            if item.binding is not None:
                self._dispatcher.release(session_id)
            if keyed is not None:  # before a conflict's fallback looks the key up
                self._decide(session_id, keyed, committed=False)

        try:
            await self._store.commit(ops, on_commit=on_commit, on_error=on_error)
        except ConflictError:
            if keyed is None:
                raise
            existing = await self._existing(session_id, keyed.key)
            if existing is None:
                raise
            return await self.answered_by(existing, request.releases)
        return DeliveryHandle(item)

    async def answered_by(self, existing: DeliveryHandle,
                          releases: Sequence[str]) -> DeliveryHandle:
        """A repeated key: *existing* (durable) answered the held messages *releases*, so they
        are released now, on their own (held, recovery would tell the user they were not
        answered); returns *existing*."""
        if releases:
            await self._store.commit(release_inbound(releases,
                                                     session_id=existing.session_id))
        return existing

    def _may_have_committed(self, session_id: str, item: DeliveryItem) -> None:
        """A send's write was answered with an error, and it may have committed all the same
        (the writer could not tell: "may or may not have committed", a writer process killed
        between its commit and its answer). Dropped, such a row was never delivered in order:
        a ``queued`` one waited for the stranded-row scan while the session's later sends
        went out ahead of it, and one written claimed (``sending``) was never handed to a
        route at all (a lane reads back ``queued`` rows only) and became ``unknown`` at the
        next start. So the lane is kicked to read the session's ``queued`` rows again, and
        a claimed one is first sent back to ``queued`` (:func:`send_back`: none of its
        platform I/O began); a write that did not commit is found nowhere and moves
        nothing. Until the send-back is decided the session counts as being written, so a
        later send is not written claimed ahead of it. Sync (the write's ``on_error``): only
        on that error path. A mailbox too full to take the send-back, or a closed store,
        leaves a claimed row as before."""
        if item.binding is None:
            self._dispatcher.kick(session_id)
            return
        delivery_id = item.delivery_id

        def settled(results: list[Any] | None) -> None:
            self._written(session_id)
            if results and results[-1].applied:  # it had committed
                self._dispatcher.kick(session_id)

        moves = send_back(delivery_id, now=self._store.clock(), error=_UNCERTAIN_CLAIM,
                          only_from=("sending",))
        try:
            self._store.commit_nowait(moves, on_commit=settled,
                                      on_error=lambda _: settled(None))
        except (trio.WouldBlock, StoreError):
            return
        self._writing[session_id] += 1

    def _decide(self, session_id: str, keyed: _KeyedSend, *, committed: bool) -> None:
        """The keyed send's write is decided: tell its waiters and drop it from the pending
        keys. Sync."""
        keyed.decide(committed=committed)
        entry = (session_id, keyed.key)
        if self._pending_keys.get(entry) is keyed:
            del self._pending_keys[entry]

    def _written(self, session_id: str) -> None:
        left = self._writing[session_id] - 1
        if left:
            self._writing[session_id] = left
        else:
            del self._writing[session_id]

    def _committed(self, item: DeliveryItem, visible: bool, enqueued: EnqueuedDelivery) -> None:
        item.seq = enqueued.seq
        if not visible:
            item.status = "scheduled"
            item.resolve("delivered")
            return
        if item.status in TERMINAL:  # a lane found the row first and settled it already
            return
        if item.status == "pending":
            item.status = "scheduled"
        if self._registry.get(item.delivery_id) is not item:
            self._registry.add(item)  # again: a caller cancelled before the commit discarded it
        self._dispatcher.schedule(item)

    async def existing(self, session_id: str, key: str) -> DeliveryHandle | None:
        """The handle of the delivery that already holds *key* in the session, or None.

        For a caller that can skip costly work on a repeated key (resolving a media send's
        paths); :meth:`enqueue` looks the key up again, so a None here decides nothing.
        """
        return await self._existing(session_id, key)

    async def _existing(self, session_id: str, key: str) -> DeliveryHandle | None:
        """The delivery that already holds *key* in the session, or None.

        A send of the key still being written is waited for: its delivery if it commits, else
        look again (a send whose caller was cancelled may still commit; then the later write
        conflicts and its fallback finds the row).
        """
        while True:
            keyed = self._pending_keys.get((session_id, key))
            if keyed is not None:
                await keyed.decided.wait()
                if keyed.committed:
                    return DeliveryHandle(keyed.item)
                continue
            found = await self._store.read(queries.find_idempotent, session_id, key)
            if found is not None:
                break
            if (session_id, key) not in self._pending_keys:
                return None
            # A send of the key began while this one read: wait for it instead.
        live = self._registry.get(found.delivery_id)
        if live is not None:
            return DeliveryHandle(live)
        status, row = found.outbox_status, None
        if status not in TERMINAL_STATUSES:
            # Not ended: a lane that loads the row later delivers the very item registered
            # here (a refill takes a registered item as it is), so it is built from the whole
            # row, its blocks and metadata included, not from the status view.
            row = await self._row(found)
            live = self._registry.get(found.delivery_id)
            if live is not None:  # a lane loaded it meanwhile
                return DeliveryHandle(live)
            if row is None:  # it ended and a prune deleted it meanwhile: the key is free
                return await self._existing(session_id, key)
            status = row.status
        if row is None or status in TERMINAL_STATUSES:
            # Ended: nothing delivers it again; the item only answers wait().
            item = DeliveryItem(delivery_id=found.delivery_id, session_id=session_id,
                                kind=found.kind, blocks=(), text=found.text,
                                channel=found.channel, metadata={}, seq=found.seq,
                                status="scheduled")
            item.resolve(outcome_of(status))
            return DeliveryHandle(item)
        item = item_from_row(row)
        self._registry.add(item)  # from now on, the lane that ends the row resolves it too
        # It may have ended between the read and the registration: look once more.
        again = await self._store.read(queries.find_idempotent, session_id, key)
        gone = again is None or again.delivery_id != found.delivery_id
        if not gone and again.outbox_status in TERMINAL_STATUSES:
            item.resolve(outcome_of(again.outbox_status))
        elif gone and item.status not in TERMINAL:
            # It ended before the registration (no lane holds this item) and a prune deleted
            # it: nothing would ever resolve the item. The key is free, as after any prune
            # (another send may have taken it meanwhile: the look again finds that one).
            self._registry.discard(item)
            return await self._existing(session_id, key)
        return DeliveryHandle(item)

    async def _row(self, found: DeliveryStatus) -> OutboxRow | None:
        """The outbox row of *found* as a lane loads it (one seek on the session's seq)."""
        rows = await self._store.read(functools.partial(
            queries.open_outbox_rows, after_seq=found.seq - 1, limit=1,
            statuses=OUTBOX_STATUSES), found.session_id)
        return rows[0] if rows and rows[0].delivery_id == found.delivery_id else None

    def floor_time(self) -> float:
        """A time on the store's clock no later than the ``created_at`` of any row a send
        commits from now on: the clock now, or the ``created_at`` of the oldest send whose
        write is still in flight, if earlier. A row's ``created_at`` is read as its send builds
        it, before its commit (no store round trip per send for it): a gateway welcome that
        said the clock itself as ``server_time`` was later than a reply in flight then, and a
        client that takes rows written before its first welcome for history (``tidings
        chat``) took that reply, committed after the welcome, for one. Sync; costs a look at
        each send in flight."""
        now = self._store.clock()
        return min(now, *self._unwritten.values()) if self._unwritten else now

    def _build(self, request: DeliveryRequest, now: float) -> tuple[DeliveryItem, list[Op]]:
        writes_history = request.policy != "transient"
        delivery_id, work_id, history_id = _new_ids("dlv", "work", "msg")
        message_id = history_id if writes_history else None
        status = "queued" if request.visible else "sent"
        claimant, lease, attempts, extra = None, None, 0, ()
        blocks_json = _blocks_json(request.blocks)
        metadata_json = json.dumps(dict(request.metadata)) if request.metadata else "{}"
        lone_text = len(request.blocks) == 1 and request.blocks[0].type == "text"
        artifacts: Sequence[str] = ([json.dumps(dict(a.metadata)) for a in request.artifacts]
                                    if request.artifacts else ())
        if not lone_text:  # a lone text block is its text, capped already: one test
            _check_stored_size(blocks_json, metadata_json, artifacts)
        binding = self._claimable(request)
        try:
            if binding is not None:
                status, claimant, attempts = "sending", self._store.claimant, 1
                lease = now + self._dispatcher.lease
                _, degraded = adapt_blocks(request.blocks, binding.capabilities)
                if degraded:
                    extra = (("delivery.degraded", json.dumps(
                        {"missing": degraded, "route": type(binding.route).__name__})),)
            values = {
                "delivery_id": delivery_id, "session_id": request.session_id,
                "owner_turn_id": request.turn_id, "work_id": work_id, "kind": request.kind,
                "channel": request.channel, "text": request.text,
                "blocks": blocks_json,
                "metadata": metadata_json,
                "visible": int(request.visible),
                "history_message_id": message_id,
                "failure_history_text": request.failure_history_text,
                "idempotency_key": request.idempotency_key, "status": status,
                "claimant": claimant, "lease_expires_at": lease, "attempts": attempts,
                "created_at": now, "updated_at": now,
            }
            work_status = TRANSITIONS[status][1]  # the one table of work statuses
            ops: list[Op] = [
                OutboxInsert(values, extra),
                InsertRows("work_items", _WORK_COLUMNS, ((
                    work_id, "delivery.send", delivery_id, None, work_status, claimant, lease,
                    attempts, now, now),)),
            ]
            if writes_history:
                text = request.history_text if request.history_text is not None else request.text
                ops.append(InsertRows("messages", _MESSAGE_COLUMNS, ((
                    message_id, request.session_id, request.turn_id, delivery_id, "assistant",
                    request.history_kind, text, request.policy, int(request.visible),
                    int(request.policy == "persist"), now, now),)))
            if request.artifacts:
                ops.append(InsertRows("artifacts", _ARTIFACT_COLUMNS, tuple(
                    (a.artifact_id, request.session_id, request.turn_id, delivery_id, a.block_type,
                     a.source_kind, a.location, a.name, a.media_type, a.summary,
                     metadata, now) for a, metadata in zip(request.artifacts, artifacts,
                                                           strict=True))))
            ops += release_inbound(request.releases, session_id=request.session_id)
            item = DeliveryItem(delivery_id=delivery_id, session_id=request.session_id,
                                kind=request.kind, blocks=request.blocks, text=request.text,
                                channel=request.channel, metadata=request.metadata,
                                turn_id=request.turn_id, size=held_size(
                                    request.text, blocks_json, metadata_json,
                                    lone_text=lone_text))
            item.binding = binding
            return item, ops
        except BaseException:  # nothing is written: give the lane's reservation back
            if binding is not None:
                self._dispatcher.release(request.session_id)
            raise

    def _claimable(self, request: DeliveryRequest) -> Binding | None:
        """The bound route, if this delivery may be claimed as it is written (and reserve the
        session's lane for it); else None."""
        if not request.visible or self._writing[request.session_id]:
            return None
        binding = self._router.binding(request.session_id)
        if binding is None or not self._dispatcher.reserve(request.session_id):
            return None
        return binding
