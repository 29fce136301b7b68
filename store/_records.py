"""Frozen records read back from the store (what status views, history and events return)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Set
from types import MappingProxyType
from typing import Any

import attrs

__all__ = [
    "DeliveryStatus",
    "HistoryMessage",
    "OutboxRow",
    "RuntimeEvent",
    "SessionRecord",
    "frozen",
    "frozen_json",
    "held_size",
    "rows_within",
]


def held_size(text: str, blocks: str, metadata: str, *, lone_text: bool) -> int:
    """What a delivery counts against a lane's memory budget (``Dispatcher.lane_bytes``),
    from its outbox columns as stored: the length of its text, plus that of its blocks' JSON
    unless they are one text block (that block is the text), plus that of its metadata's JSON
    unless it is empty. A control block's data, a media block's location and summary and the
    metadata are held with the item as its text is, and can be as large (a control-only send
    has no text at all)."""
    size = len(text)
    if not lone_text:
        size += len(blocks)
    if metadata != "{}":
        size += len(metadata)
    return size


def frozen_json(text: str | None) -> Any:
    """Decode stored JSON into read-only values (mappings become ``MappingProxyType``)."""
    if not text:
        return MappingProxyType({})
    return frozen(json.loads(text))


def frozen(value: Any) -> Any:
    """*value* read-only all the way down, as a copy: mappings become ``MappingProxyType``,
    lists and tuples tuples, sets frozensets; other objects are kept as they are. Stored JSON
    is read back so, and the frozen records given to routes and lifecycle hooks freeze what
    they are given the same way, so live values and values read back look alike."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: frozen(v) for k, v in value.items()})
    if isinstance(value, list | tuple):
        return tuple(frozen(v) for v in value)
    if isinstance(value, Set):
        return frozenset(value)
    return value


@attrs.frozen
class DeliveryStatus:
    """One delivery as the operator sees it: the lifecycle view over outbox and work item.

    ``status`` is the effective status (a ``sending`` row claimed by a process that is no longer
    the latest is reported ``unknown`` even before recovery has run); ``outbox_status`` and
    ``work_status`` are the underlying durable states, with the claim (``claimant``,
    ``attempts``, ``last_error``, ``lease_expires_at``) kept for debugging.
    """

    delivery_id: str
    session_id: str
    seq: int
    kind: str
    channel: str | None
    visible: bool
    text: str
    owner_turn_id: str | None
    status: str
    outbox_status: str
    work_id: str | None
    work_status: str | None
    claimant: str | None
    lease_expires_at: float | None
    attempts: int
    last_error: str | None
    created_at: float
    updated_at: float

    COLUMNS = ("delivery_id, session_id, seq, kind, channel, visible, text, owner_turn_id, "
               "status, outbox_status, work_id, work_status, claimant, lease_expires_at, "
               "attempts, last_error, created_at, updated_at")

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> DeliveryStatus:
        """The record of one row of the store's delivery status query (the store's own use)."""
        values = list(row)
        values[5] = bool(values[5])
        return cls(*values)

    def as_dict(self) -> dict[str, Any]:
        """The record as a plain dict of its fields, e.g. to print as JSON."""
        return attrs.asdict(self)


@attrs.frozen
class OutboxRow:
    """An outbox row as a dispatcher needs it (blocks and metadata decoded, read-only)."""

    delivery_id: str
    session_id: str
    seq: int
    kind: str
    channel: str | None
    text: str
    blocks: tuple[Mapping[str, Any], ...]
    metadata: Mapping[str, Any]
    visible: bool
    status: str
    attempts: int
    size: int = 0
    """What a lane counts for it against its memory budget (:func:`held_size`)."""
    created_at: float = 0.0
    """When it was written (the store's clock): a replay tells a client (see
    ``channels/_gateway_admit.py``)."""

    COLUMNS = ("delivery_id, session_id, seq, kind, channel, text, blocks, metadata, visible, "
               "status, attempts, created_at")

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> OutboxRow:
        """The record of one outbox row as the store's queries select it (the store's own use)."""
        (delivery_id, session_id, seq, kind, channel, text, blocks, metadata, visible, status,
         attempts, created_at) = row
        decoded = frozen_json(blocks)
        lone_text = len(decoded) == 1 and decoded[0].get("type") == "text"
        return cls(delivery_id, session_id, seq, kind, channel, text, decoded,
                   frozen_json(metadata), bool(visible), status, attempts,
                   held_size(text, blocks or "", metadata or "{}", lone_text=lone_text),
                   created_at)


@attrs.frozen
class HistoryMessage:
    """One row of session history. ``model_visible`` rows are what later model context sees."""

    message_id: str
    session_id: str
    turn_id: str | None
    delivery_id: str | None
    role: str
    kind: str
    text: str
    policy: str
    visible: bool
    model_visible: bool
    created_at: float
    updated_at: float

    COLUMNS = ("message_id, session_id, turn_id, delivery_id, role, kind, text, policy, visible, "
               "model_visible, created_at, updated_at")

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> HistoryMessage:
        """The record of one row of the store's history query (the store's own use)."""
        values = list(row)
        values[8], values[9] = bool(values[8]), bool(values[9])
        return cls(*values)


@attrs.frozen
class RuntimeEvent:
    """An append-only runtime event; ``seq`` is the store's monotonic event sequence."""

    seq: int
    type: str
    session_id: str | None
    delivery_id: str | None
    data: Mapping[str, Any]
    created_at: float

    COLUMNS = "event_seq, type, session_id, delivery_id, data, created_at"

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> RuntimeEvent:
        """The record of one row of the store's event query, its ``data`` read-only (the
        store's own use)."""
        seq, kind, session_id, delivery_id, data, created_at = row
        return cls(seq, kind, session_id, delivery_id, frozen_json(data), created_at)

    def as_dict(self) -> dict[str, Any]:
        """The event as a plain JSON-ready dict (``data`` thawed to plain dicts and lists)."""
        return {"seq": self.seq, "type": self.type, "session_id": self.session_id,
                "delivery_id": self.delivery_id, "data": _thaw(self.data),
                "created_at": self.created_at}


def _thaw(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return [_thaw(v) for v in value]
    return value


@attrs.frozen
class SessionRecord:
    """A session: who it belongs to, its parent (child sessions), its state and last seq, and
    the ``metadata`` given to ``create_session`` (read-only, as stored; ``{}`` when none)."""

    session_id: str
    core_id: str
    channel: str | None
    conversation_key: str | None
    parent_session_id: str | None
    state: str
    last_seq: int
    created_at: float
    metadata: Mapping[str, Any] = attrs.field(factory=lambda: MappingProxyType({}))

    COLUMNS = ("session_id, core_id, channel, conversation_key, parent_session_id, state, "
               "last_seq, created_at, metadata")

    @classmethod
    def from_row(cls, row: tuple[Any, ...]) -> SessionRecord:
        """The record of one row of the store's session query, its ``metadata`` read-only (the
        store's own use)."""
        *fields, metadata = row
        return cls(*fields, frozen_json(metadata))


def rows_within(cursor: Iterable[tuple[Any, ...]], max_size: int | None) -> list[OutboxRow]:
    """The :class:`OutboxRow`\\ s of *cursor* (rows of ``OutboxRow.COLUMNS``), stopping before
    the row whose ``size`` (:func:`held_size`) would take their sizes past *max_size*; the first
    row is always taken, however large (None: every row). Rows are stepped one at a time, so
    none past the one that stops the read is loaded: a page of large rows holds about
    *max_size*, not its row count times the largest row."""
    if max_size is None:
        return [OutboxRow.from_row(row) for row in cursor]
    rows: list[OutboxRow] = []
    total = 0
    for raw in cursor:
        row = OutboxRow.from_row(raw)
        total += row.size
        if rows and total > max_size:
            break
        rows.append(row)
    return rows
