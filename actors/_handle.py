"""Delivery handles: the in-memory side of one delivery.

In-memory status: ``pending -> scheduled -> delivered | failed | unrouted`` (``unknown`` only
when a crash interrupted the platform call, or an acking route's client went away unacked).
``wait()`` returns only once the terminal outbox state is durable. Handles are kept in a weak
registry: the runtime holds no memory for a delivery nobody is waiting on, so a large backlog
lives in the outbox, not in RAM.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any

import trio

from tidings.actors._blocks import ContentBlock
from tidings.errors import RuntimeClosedError
from tidings.store._ids import escape_lone_surrogates

__all__ = ["TERMINAL", "DeliveryHandle", "DeliveryItem", "HandleRegistry", "describe_error",
           "error_message", "outcome_of"]

TERMINAL = frozenset({"delivered", "failed", "unrouted", "unknown"})

_OUTCOME_OF = {"sent": "delivered", "failed": "failed", "unrouted": "unrouted",
               "unknown": "unknown"}


def outcome_of(status: str) -> str:
    """The in-memory outcome for a terminal outbox status (``sent`` -> ``delivered``)."""
    return _OUTCOME_OF.get(status, status)


def describe_error(error: BaseException, limit: int = 500) -> str:
    """``Type: message``, capped, for ``last_error``.

    An exception group (a route or turn that failed inside a nursery of its own) is described
    by what it holds: its one error as that error, several after the group's own line. Never
    raises for an odd error: one whose ``str()`` raises (a broken ``__str__`` in a platform
    library) is described by its type and that failure, so the delivery it ended is still
    recorded ``failed`` rather than crashing its session lane. Lone surrogates (bytes a
    library decoded with ``surrogateescape``: a file name, a process's output), which SQLite
    cannot store, are written as their ``\\udcff`` escapes for the same reason.
    """
    leaves = _leaves(error) if isinstance(error, BaseExceptionGroup) else []
    if len(leaves) == 1:
        return describe_error(leaves[0], limit)
    text = _one_line(error)
    if leaves:  # the text is capped anyway: the first few say enough
        text += ": " + "; ".join(_one_line(leaf)[:limit] for leaf in leaves[:10])
    text = escape_lone_surrogates(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error_message(error)}"


def error_message(error: BaseException) -> str:
    """``str(error)``, or ``<str() raised KeyError>`` when its ``__str__`` raises (a library
    exception reading an attribute it never set): describing an error must not fail what
    records it (a delivery's ``last_error``, a turn's ``failed`` event)."""
    try:
        return str(error)
    except Exception as exc:  # noqa: BLE001 - the description must not fail the recording
        return f"<str() raised {type(exc).__name__}>"


def _leaves(group: BaseExceptionGroup[BaseException]) -> list[BaseException]:
    """The errors a group holds, however nested, without the cancellations that came along."""
    leaves: list[BaseException] = []
    stack: list[BaseException] = [group]
    while stack:
        current = stack.pop()
        if isinstance(current, BaseExceptionGroup):
            stack.extend(reversed(current.exceptions))
        elif not isinstance(current, trio.Cancelled):
            leaves.append(current)
    return leaves


class DeliveryItem:
    """One delivery in memory: what dispatch needs, plus its status and waiters."""

    __slots__ = ("__weakref__", "_closed", "_event", "binding", "blocks", "channel",
                 "delivery_id", "kind", "metadata", "seq", "session_id", "size", "status",
                 "text", "turn_id")

    def __init__(self, *, delivery_id: str, session_id: str, kind: str,
                 blocks: tuple[ContentBlock, ...], text: str, channel: str | None,
                 metadata: Mapping[str, Any], turn_id: str | None = None, seq: int = 0,
                 status: str = "pending", size: int = 0) -> None:
        self.delivery_id = delivery_id
        self.session_id = session_id
        self.kind = kind
        self.blocks = blocks
        self.text = text
        # What a lane counts for it against ``lane_bytes`` (``store._records.held_size``:
        # its text, its blocks' and metadata's JSON); 0 for an item no lane holds.
        self.size = size
        self.channel = channel
        self.metadata = metadata
        self.turn_id = turn_id
        self.seq = seq
        self.status = status
        self._event: trio.Event | None = None
        self._closed = False
        self.binding: Any = None  # set when the row was claimed as it was written

    def resolve(self, status: str) -> None:
        """Record a terminal status (sync). The first terminal status wins."""
        if self.status in TERMINAL:
            return
        self.status = status
        if self._event is not None:
            self._event.set()

    def close(self) -> None:
        """The runtime stopped before this delivery ended: wake waiters with an error."""
        if self.status in TERMINAL:
            return
        self._closed = True
        if self._event is not None:
            self._event.set()

    async def wait(self) -> str:
        if self.status not in TERMINAL and not self._closed:
            if self._event is None:
                self._event = trio.Event()
            await self._event.wait()
        else:
            await trio.lowlevel.checkpoint()
        if self.status in TERMINAL:
            return self.status
        raise RuntimeClosedError(
            f"the runtime stopped before delivery {self.delivery_id} ended; its durable state "
            "is in the outbox (see delivery_status)")


class DeliveryHandle:
    """What ``send_*`` returns: a stable ``delivery_id`` and a way to wait for the outcome."""

    __slots__ = ("_item",)

    def __init__(self, item: DeliveryItem) -> None:
        self._item = item

    @property
    def delivery_id(self) -> str:
        """The delivery's id (stable: the outbox row's, for :meth:`Runtime.delivery_status`)."""
        return self._item.delivery_id

    @property
    def session_id(self) -> str:
        """The session the delivery belongs to."""
        return self._item.session_id

    @property
    def kind(self) -> str:
        """What was sent: ``message``, ``progress`` or ``notice``."""
        return self._item.kind

    @property
    def seq(self) -> int:
        """The per-session sequence number (0 until the intent is durable)."""
        return self._item.seq

    @property
    def status(self) -> str:
        """In-memory dispatch status: pending, scheduled, delivered, failed, unrouted,
        unknown; once terminal, it stays (see :meth:`wait`)."""
        return self._item.status

    async def wait(self) -> str:
        """Block until the delivery's terminal state is durable; return it.

        Returns ``"delivered"`` (the route accepted it and ``sent`` is recorded), ``"failed"``,
        ``"unrouted"``, or ``"unknown"`` (a crash interrupted the platform call, or an acking
        route's client went away before acking it: ``rt.abandon_unacked``). Raises
        :class:`RuntimeClosedError` if the runtime stops first. Always a checkpoint.

        The handle keeps that first outcome: a row that moves on afterwards (an ``unknown``
        one its client acks, ``rt.confirm``, or a reconcile settles; an ``unknown`` or
        ``unrouted`` one handed back with ``rt.requeue`` and delivered) is followed with
        ``rt.delivery_status``, whose ``status`` is the durable one.
        """
        return await self._item.wait()

    def __repr__(self) -> str:
        return f"<DeliveryHandle {self.delivery_id} {self.status}>"


class HandleRegistry:
    """delivery_id -> live item, held weakly (see the module docstring)."""

    def __init__(self) -> None:
        self._items: weakref.WeakValueDictionary[str, DeliveryItem] = (
            weakref.WeakValueDictionary())

    def add(self, item: DeliveryItem) -> None:
        self._items[item.delivery_id] = item

    def discard(self, item: DeliveryItem) -> None:
        """Forget *item* (a send whose write failed), unless another item took its id."""
        if self._items.get(item.delivery_id) is item:
            del self._items[item.delivery_id]

    def get(self, delivery_id: str) -> DeliveryItem | None:
        return self._items.get(delivery_id)

    def resolve(self, delivery_id: str, status: str) -> None:
        item = self._items.get(delivery_id)
        if item is not None:
            item.resolve(status)

    def close_all(self) -> None:
        for item in list(self._items.values()):
            item.close()
