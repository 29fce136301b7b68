"""Following runtime events live: the store is the feed, commits are the doorbell.

Every state change appends a runtime event in the same transaction as the change. A follower
reads events after the last ``seq`` it has seen, and when it has caught up, sleeps until the
writer commits another batch. It never misses or reorders an event, however slow it is, and a
slow follower costs memory for one page only. When the runtime has closed, a follower reads
what is left straight from the database file and its iteration ends.
"""

from __future__ import annotations

import collections
import sqlite3
from typing import TYPE_CHECKING

import trio

from tidings.actors._status import check_seq
from tidings.errors import StoreClosedError, ValidationError
from tidings.store import RuntimeEvent, Store, queries, read_database

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

__all__ = ["EventBus", "EventFeed"]


class EventBus:
    """Counts committed write batches and wakes followers waiting for the next one."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.version = 0
        self.closed = False
        self._changed = trio.Event()
        self._listener: Callable[[], None] = self._notify
        store.writer.add_listener(self._listener)

    def _notify(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = trio.Event()

    async def wait_past(self, version: int) -> None:
        """Block until a batch commits after *version* was read (returns at once if one has),
        or the bus is closed (no batch will commit any more)."""
        while self.version <= version and not self.closed:
            await self._changed.wait()

    def follow(self, after_seq: int | None = None, *, page: int = 500) -> EventFeed:
        """A feed of the events after *after_seq* (an event ``seq``; None: from now on).
        Raises :class:`ValidationError` for an *after_seq* that is not an int >= 0 (and the
        feed, at its first ``__anext__``, for one past the newest event; at any
        ``__anext__``, :class:`~tidings.errors.EventsPrunedError` for one below the event
        horizon)."""
        if after_seq is not None:
            check_seq("after_seq", after_seq)
        return EventFeed(self._store, self, after_seq, page)

    def close(self) -> None:
        """The writer has stopped: wake every follower (each reads what is left, then ends)."""
        if self.closed:
            return
        self.closed = True
        self._store.writer.remove_listener(self._listener)
        self._changed.set()


class EventFeed:
    """An async iterator of :class:`RuntimeEvent`, in ``seq`` order, forever.

    With ``after_seq=None`` it starts after the newest event at the time of the first
    ``__anext__``; an *after_seq* past the newest event is refused there
    (:class:`ValidationError`). Once the runtime has closed, it yields the events it has not
    read yet (read from the database file, as :func:`~tidings.store.read_database` does) and
    then ends.
    Tasks iterating one feed share it: each event goes to one of them, once.

    A prune (:meth:`Runtime.prune`, ``tidings prune``) deletes old events below a horizon.
    A feed whose cursor is below it (an *after_seq* given, or a follower that fell that far
    behind) raises :class:`~tidings.errors.EventsPrunedError` (a ``ValidationError`` naming
    ``after_seq``, with ``first_kept``) instead of skipping them in silence; following again
    from ``first_kept - 1`` accepts the gap.
    """

    def __init__(self, store: Store, bus: EventBus, after_seq: int | None, page: int) -> None:
        self._store = store
        self._bus = bus
        self._after = after_seq
        self._checked = after_seq is None  # whether after_seq was found to be no future seq
        self._page = page
        self._buffer: collections.deque[RuntimeEvent] = collections.deque()

    def __aiter__(self) -> EventFeed:
        return self

    async def __anext__(self) -> RuntimeEvent:
        if self._after is None:
            newest = await self._read(_newest_seq)
            if self._after is None:  # (another task sharing this feed may have set it)
                self._after = newest
        while not self._buffer:
            version = self._bus.version  # before the read: a commit during it is not missed
            closed = self._bus.closed  # likewise: a read after the close has read everything
            after = self._after
            events = await self._read(queries.events_after, after, self._page)
            if not self._checked:
                await self._check_after(after, events)
            # Tasks sharing this feed read concurrently: keep only what no other read has
            # buffered meanwhile, so each event comes out once, still in order.
            events = [event for event in events if event.seq > self._after]
            if events:
                self._buffer.extend(events)
                self._after = events[-1].seq
            elif self._buffer:  # another task's read filled it meanwhile
                continue
            elif closed:
                raise StopAsyncIteration
            else:
                await self._bus.wait_past(version)
        return self._buffer.popleft()

    async def _check_after(self, after: int, events: list[RuntimeEvent]) -> None:
        """Refuse an ``after_seq`` past the newest event, once, at the first read (*events*,
        read after *after*): no seq this database gave out, but one of another database or of
        this one before it was restored from an older copy. The events it writes next are new
        to the follower, and would be skipped in silence until their seqs passed it. (A prune
        never deletes the newest event, so a seq a follower has seen here is never past the
        newest.)"""
        if not events:
            newest = await self._read(_newest_seq)
            if after > newest:
                raise ValidationError("after_seq", f"{after} is past the newest event "
                                                   f"({newest}): a seq of another database, "
                                                   "or of this one before it was restored?")
        self._checked = True

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        # The bus closes right before the store, with no checkpoint between: while it is open,
        # so is the store's read pool. But a pool read waits for a worker thread, and the
        # runtime may close meanwhile (a loaded machine starts the thread late): the pool then
        # refuses it before running anything, and the file is read instead.
        if not self._bus.closed:
            try:
                return await self._store.read(fn, *args)
            except StoreClosedError:
                if not self._bus.closed:
                    raise
        return await trio.to_thread.run_sync(read_database, self._store.path, fn, *args)


def _newest_seq(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT COALESCE(MAX(event_seq), 0) FROM events").fetchone()[0])
