"""The runtime's public methods for channels whose clients acknowledge and come back.

A mixin of :class:`~tidings.actors.Runtime`. ``Runtime.confirm`` / ``abandon_unacked`` settle
single rows; these settle what a reconnecting client says it has (``confirm_through``), read
back what it lacks (``stored_deliveries``; ``drop_missed_progress`` ends the progress notes
among those, never replayed), hand ``unknown`` / ``unrouted`` rows back to the
session's lane (``requeue``; after a bind, inside ``hold_binds``), and remember the client's
message ids durably so a repeated message is recognised (``remember_client_message``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any

import attrs
import trio

from tidings.actors._lanes import check_delivery_ids
from tidings.actors._outbound import build_outbound, item_from_row
from tidings.actors._policy import KINDS
from tidings.actors._records import Outbound
from tidings.actors._status import check_id, check_seq, check_session_id
from tidings.errors import SessionNotFoundError, ValidationError
from tidings.store import OUTBOX_STATUSES, acking, end_stale_progress, recovery, transition

if TYPE_CHECKING:
    from tidings.actors._lanes import Dispatcher
    from tidings.actors._recovery import RecoveryScanner
    from tidings.actors._router import SessionInteractionRouter
    from tidings.store import Store

__all__ = ["REPLAYABLE_STATUSES", "AckingSupport", "StoredDelivery"]

REPLAYABLE_STATUSES = ("sending", "unknown", "sent", "unrouted", "queued")
"""Every outbox status but ``failed``: what :meth:`AckingSupport.stored_deliveries` reads."""

_PAGE = 1000


@attrs.frozen
class StoredDelivery:
    """A delivery read back from the outbox: its durable ``status``, the outbound a route
    would be handed (blocks adapted to the bound route's capabilities), and when it was
    written (``created_at``: the store's clock, unix seconds; a replay says it, so a client
    that began later can tell history from what was written while it was away)."""

    status: str
    outbound: Outbound
    created_at: float | None = None


def _conversation(channel: object, conversation_key: object) -> tuple[str, str]:
    """*channel* and *conversation_key* of a conversation that is looked up (uncapped: earlier
    versions stored longer ones), or :class:`ValidationError` naming the one that is not a
    non-empty string."""
    return (check_id("channel", channel, max_chars=None),
            check_id("conversation_key", conversation_key, max_chars=None))


def _names(field: str, values: Iterable[str], allowed: tuple[str, ...]) -> tuple[str, ...]:
    """*values* as a tuple of names from *allowed*, at least one (a lone string is refused:
    it would be read as its characters; something not iterable is a ``TypeError`` naming
    *field*)."""
    if isinstance(values, str | bytes):
        raise ValidationError(field, f"must be a list of names, not the string {values!r}")
    try:
        names = tuple(values)
    except TypeError:
        raise TypeError(f"{field} must be a list of names, got "
                        f"{type(values).__name__}") from None
    if not names:
        raise ValidationError(field, f"must name at least one of {', '.join(allowed)}")
    for name in names:
        if name not in allowed:
            raise ValidationError(field, f"must be among {', '.join(allowed)}, got {name!r}")
    return names


class AckingSupport:
    """Replay and acknowledgement helpers (see each method)."""

    store: Store
    core_id: str
    dispatcher: Dispatcher
    router: SessionInteractionRouter
    scanner: RecoveryScanner

    async def confirm_through(self, session_id: str, seq: int) -> list[str]:
        """The client has every row of *session_id* up to *seq*: those still ``sending`` or
        ``unknown`` become ``sent`` (as :meth:`Runtime.confirm` does). Returns their ids.
        Raises :class:`ValidationError` naming ``session_id`` or ``seq``."""
        check_session_id("session_id", session_id)
        seq = check_seq("seq", seq)
        ids = await self.store.read(acking.ids_through, session_id, seq, ("sending", "unknown"))
        moved: list[str] = []
        for start in range(0, len(ids), _PAGE):
            moved += await self.dispatcher.confirm(ids[start:start + _PAGE])
        return moved

    async def drop_missed_progress(self, session_id: str, after_seq: int) -> list[str]:
        """The client has the rows of *session_id* up to *after_seq* and no later one: its
        progress rows after that left ``unknown`` (sent on a connection that dropped) become
        ``failed`` with ``stale_progress``, as a progress note for nobody does. A replay never
        sends one (late, it is noise), so nothing else would ever settle it. Returns their
        ids. Raises :class:`ValidationError` naming ``session_id`` or ``after_seq``."""
        check_session_id("session_id", session_id)
        after_seq = check_seq("after_seq", after_seq)
        ids = await self.store.read(acking.unknown_progress_after, session_id, after_seq)
        if not ids:
            return []
        now = self.store.clock()
        # unknown -> queued -> failed in one write (no lane sees it queued), as a reconcile
        # ends an earlier process's missing progress note: unknown leaves only on word from
        # the client's side, and after_seq is that word.
        results = await self.store.commit(end_stale_progress(ids, "unknown", now=now))
        return [delivery_id for delivery_id, result in zip(ids, results[1::2], strict=True)
                if result.applied]

    async def requeue(self, session_id: str, delivery_ids: Iterable[str]) -> list[str]:
        """Hand rows of *session_id* that are ``unknown`` or ``unrouted`` back to its lane
        (``queued``, delivered again in seq order). Only a reconciling channel whose client
        provably lacks them may ask. An id of another session's row is not moved: that
        session's channel did not ask, and this session's lane is the one kicked. Inside
        ``hold_binds``, a row the lane claimed and has not handed to a route goes back too if
        one of them is older (see :meth:`Dispatcher.hand_back_claimed`). A progress note an
        earlier process wrote ends ``failed`` (``stale_progress``) instead, in the same write
        (no lane sees it queued), as a reconcile's ``"missing"`` ends one: late, a dead turn's
        "working on it" is noise. Returns the ids handed back to the lane. Raises as
        :func:`~tidings.actors._lanes.check_delivery_ids` does, and :class:`ValidationError`
        naming ``session_id``."""
        check_session_id("session_id", session_id)
        ids = check_delivery_ids(delivery_ids)
        theirs: set[str] = set()
        for start in range(0, len(ids), _PAGE):
            theirs.update(await self.store.read(acking.session_deliveries, session_id,
                                                ids[start:start + _PAGE]))
        ids = [delivery_id for delivery_id in ids if delivery_id in theirs]
        if not ids:
            await trio.lowlevel.checkpoint()
            return []
        now = self.store.clock()

        def on_commit(results: list[Any]) -> None:  # also when the caller has gone
            if any(result.applied for result in results):
                self.dispatcher.kick(session_id)

        def on_error(error: BaseException) -> None:
            # It may have committed all the same ("may or may not have committed": a writer
            # process killed before it answered): unkicked, a re-queued row waited for a
            # stranded-row scan while the session's later sends went out ahead of it. A
            # write that did not commit leaves the lane nothing new to find.
            self.dispatcher.kick(session_id)

        up_to = self.scanner.opened_at_rowid
        stale = ([] if up_to is None
                 else await self.store.read(recovery.earlier_progress, ids, up_to))
        results = await self.store.commit([
            *(transition(delivery_id, "queued", now=now, only_from=("unknown", "unrouted"))
              for delivery_id in ids),
            *(transition(delivery_id, "failed", now=now, error="stale_progress",
                         only_from=("queued",)) for delivery_id in stale)],
            on_commit=on_commit, on_error=on_error)
        ended = {delivery_id for delivery_id, result in zip(stale, results[len(ids):],
                                                            strict=True) if result.applied}
        moved = [delivery_id for delivery_id, result in zip(ids, results, strict=False)
                 if result.applied and delivery_id not in ended]
        if moved:  # inside a hold: the claimed row too
            await self.dispatcher.hand_back_claimed(session_id)
        return moved

    def hold_binds(self, route: object) -> AbstractAsyncContextManager[None]:
        """``async with rt.hold_binds(route):`` every session bound to *route* inside the
        block claims nothing until it ends, so rows it hands back to the session's lane in
        the block (``requeue``) go out before anything newer of the session; first await
        :meth:`unrouted_written` before reading the ``unrouted`` rows to hand back. See
        :meth:`~tidings.actors._lanes.Dispatcher.hold_binds`."""
        return self.dispatcher.hold_binds(route)

    async def unrouted_written(self, session_id: str) -> None:
        """Return once no ``unrouted`` write of *session_id*'s lane is in flight (a row it
        found no route for just before a bind). Always a checkpoint. Raises
        :class:`ValidationError` naming ``session_id`` if it is not a non-empty string."""
        await self.dispatcher.unrouted_written(check_session_id("session_id", session_id))

    async def stored_deliveries(self, session_id: str, *, after_seq: int = 0,
                                limit: int = 256,
                                kinds: Iterable[str] = ("message", "notice", "progress"),
                                statuses: Iterable[str] = REPLAYABLE_STATUSES,
                                max_bytes: int | None = None,
                                ) -> list[StoredDelivery]:
        """Rows of *session_id* with ``seq > after_seq`` of *kinds* in *statuses*, in seq
        order, at most *limit* (page on with the last ``outbound.seq``); never a
        ``visible=False`` row (history only: no route ever gets it); *limit* is an int >= 1.
        *max_bytes* (an int >= 0,
        or None) also stops the page before the row that would take its rows past that size,
        counted as a lane counts its budget (``lane_bytes``: text, blocks' and metadata's
        JSON); the first row always comes, however large (so ``0``, a budget the lanes take
        too, is one row a page). A page of texts up to 1 MiB each is
        otherwise *limit* of them. Raises :class:`ValidationError` naming a bad
        ``session_id``, ``after_seq``, ``limit``, ``kinds`` (of ``message``, ``progress``,
        ``notice``), ``statuses`` (outbox statuses) or ``max_bytes``."""
        check_session_id("session_id", session_id)
        after_seq = check_seq("after_seq", after_seq)
        limit = check_seq("limit", limit)
        if limit < 1:  # an empty page, which a pager reads as the end
            raise ValidationError("limit", "must be an int >= 1, got 0")
        kinds = _names("kinds", kinds, KINDS)
        statuses = _names("statuses", statuses, OUTBOX_STATUSES)
        if max_bytes is not None:
            check_seq("max_bytes", max_bytes)
        binding = self.router.binding(session_id)
        capabilities = binding.capabilities if binding is not None else frozenset({"text"})
        rows = await self.store.read(functools.partial(
            acking.rows_after, kinds=kinds, statuses=statuses, max_size=max_bytes),
            session_id, after_seq, limit)
        return [StoredDelivery(row.status, build_outbound(item_from_row(row), capabilities,
                                                          attempt=row.attempts)[0],
                               row.created_at)
                for row in rows]

    async def last_seq(self, session_id: str) -> int:
        """The highest ``seq`` assigned in the session (0 before its first delivery).
        Raises :class:`SessionNotFoundError`, or :class:`ValidationError` naming
        ``session_id`` if it is not a non-empty string."""
        check_session_id("session_id", session_id)
        found = await self.store.read(acking.session_last_seq, session_id)
        if found is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return found

    async def conversation_deliveries(self, channel: str, conversation_key: str,
                                      delivery_ids: Iterable[str]) -> list[str]:
        """Those of *delivery_ids* that are deliveries of the conversation's sessions (this
        core's, *channel*'s, *conversation_key*'s), found in one store read: what a client
        may ack although its connection was not sent them (a device catching up, a row sent
        on a connection that dropped). Raises :class:`ValidationError` naming ``channel``,
        ``conversation_key`` or ``delivery_ids`` (as
        :func:`~tidings.actors._lanes.check_delivery_ids` does: a lone id is refused, not
        read as its characters)."""
        owners = await self.delivery_owners(channel, conversation_key, delivery_ids)
        return [delivery_id for delivery_id, ours in owners.items() if ours]

    async def delivery_owners(self, channel: str, conversation_key: str,
                              delivery_ids: Iterable[str]) -> dict[str, bool]:
        """Each of *delivery_ids* the outbox still has, with whether it is a delivery of the
        conversation's sessions (as :meth:`conversation_deliveries`), in one store read. An id
        left out is no delivery: never one, or one a prune deleted (``sent`` or ``failed``,
        see Retention): an ack of it has nothing left to confirm, where one of another
        conversation's delivery is refused. Raises as :meth:`conversation_deliveries`."""
        channel, conversation_key = _conversation(channel, conversation_key)
        ids = check_delivery_ids(delivery_ids)
        if not ids:
            await trio.lowlevel.checkpoint()
            return {}
        owners: dict[str, bool] = {}
        for start in range(0, len(ids), _PAGE):
            owners.update(await self.store.read(acking.delivery_owners, self.core_id, channel,
                                                conversation_key, ids[start:start + _PAGE]))
        return owners

    async def unrouted_sessions(self, channel: str, conversation_key: str) -> list[str]:
        """The conversation's sessions (this core's, *channel*'s, *conversation_key*'s) with
        visible message or notice rows left ``unrouted`` or still ``queued`` (unrouted once
        their lane finds no route), or a visible progress note left ``unrouted`` (the
        hand-back ends it), oldest first: what a client of the conversation coming
        back must be bound to and get back, whichever session it names (an older one, left by
        ``/new`` or ``/clear``, is named by nobody after a restart). Raises
        :class:`ValidationError` naming ``channel`` or ``conversation_key`` if it is not a
        non-empty string."""
        return await self.store.read(acking.unrouted_sessions, self.core_id,
                                     check_id("channel", channel),
                                     check_id("conversation_key", conversation_key,
                                              max_chars=None))

    async def last_handed_seq(self, session_id: str) -> int:
        """The highest ``seq`` of a message or notice row of the session a client is or will
        be handed: not a ``visible=False`` or ``failed`` row, nor a progress row (never
        replayed: a client catching up does not get one), 0 before any. A client that has it
        has caught up.
        Raises :class:`SessionNotFoundError`, or :class:`ValidationError` naming
        ``session_id`` if it is not a non-empty string."""
        check_session_id("session_id", session_id)
        found = await self.store.read(acking.last_handed_seq, session_id)
        if found is None:
            raise SessionNotFoundError(f"no session {session_id!r}")
        return found

    async def client_message_outcome(self, channel: str, conversation_key: str,
                                     client_id: str) -> str | None:
        """What was recorded for a client's message id in the conversation, or None if the
        id is new. Raises :class:`ValidationError` naming ``channel``, ``conversation_key``
        or ``client_id`` if it is not a non-empty string."""
        channel, conversation_key = _conversation(channel, conversation_key)
        return await self.store.read(acking.client_message, self.core_id, channel,
                                     conversation_key,
                                     check_id("client_id", client_id, max_chars=None))

    async def remember_client_message(self, channel: str, conversation_key: str,
                                      client_id: str, *, session_id: str | None,
                                      outcome: str) -> bool:
        """Record a client's message id in the conversation (durable); False if it was
        recorded before (nothing changes). Raises :class:`ValidationError` naming
        ``channel``, ``conversation_key``, ``client_id`` (also over :data:`MAX_ID_CHARS`),
        ``session_id`` (not None or a non-empty string) or ``outcome`` (not a non-empty
        string, or one with a lone surrogate, which SQLite refuses in the writer) before
        anything is written."""
        channel, conversation_key = _conversation(channel, conversation_key)
        check_id("client_id", client_id)
        if session_id is not None:
            check_session_id("session_id", session_id)
        check_id("outcome", outcome, max_chars=None)
        [recorded] = await self.store.commit([acking.remember_client_message(
            self.core_id, channel, conversation_key, client_id, session_id=session_id,
            outcome=outcome, now=self.store.clock())])
        return bool(recorded)
