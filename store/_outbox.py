"""The durable delivery state machine: outbox rows, their work items and their events.

Outbox row: ``queued -> sending -> sent | failed | unknown | unrouted`` (plus the recovery and
reconcile moves listed in :data:`TRANSITIONS`). Every move is a :class:`Transition` op: it
applies only from an allowed source status (a guard in the ``UPDATE``), updates the matching
``delivery.send`` work item, and appends its runtime event only when it applied — so a repeated
or racing move changes nothing and records nothing. Ops merge across a group-commit batch: a
batch of 200 claims is three statements.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from tidings.store._errors import ConflictError
from tidings.store._ops import Op

__all__ = [
    "OUTBOX_STATUSES",
    "TERMINAL_STATUSES",
    "TRANSITIONS",
    "AppliedTransition",
    "EnqueuedDelivery",
    "OutboxInsert",
    "Transition",
    "end_stale_progress",
    "transition",
]

OUTBOX_STATUSES = ("queued", "sending", "sent", "failed", "unknown", "unrouted")
TERMINAL_STATUSES = frozenset({"sent", "failed", "unknown", "unrouted"})

# target status -> (allowed sources, work item status, event type)
TRANSITIONS: Mapping[str, tuple[tuple[str, ...], str, str]] = {
    "sending": (("queued",), "claimed", "delivery.sending"),
    "sent": (("sending", "unknown"), "completed", "delivery.sent"),
    "failed": (("sending", "queued"), "failed", "delivery.failed"),
    "unrouted": (("queued",), "unrouted", "delivery.unrouted"),
    "unknown": (("sending",), "abandoned", "delivery.unknown"),
    "queued": (("unknown", "unrouted"), "pending", "delivery.requeued"),
}
"""Every legal move. ``sent`` and ``failed`` never change again; ``unknown`` leaves only on word
from the platform's side: a route's reconcile (to ``sent``, or back to ``queued`` when provably
missing), an acking client's ack (``rt.confirm``: ``sent``) or its channel's ``rt.requeue``
(``queued``); ``unrouted`` only back to ``queued`` (``rt.requeue``, when a channel's client
returns).

The work item's status follows: ``pending``, ``claimed``, ``completed`` (sent: done),
``failed``, ``abandoned`` (unknown) and ``unrouted``: nobody received it and its work is not
done (a requeue gives it back as ``pending``), so never ``completed``, the word of a sent one
(schema v9 corrected those an older tidings wrote ``completed``).
A row written in its first status takes that status's work status from here too."""

_EVENT_NAMES = ("type", "session_id", "delivery_id", "data", "created_at")
_EVENT_COLUMNS = f"({', '.join(_EVENT_NAMES)})"


@attrs.frozen
class EnqueuedDelivery:
    """What enqueueing one delivery assigned: its per-session ``seq``."""

    seq: int

    def __reduce__(self) -> tuple[Any, ...]:  # answers cross the writer process's pipe
        return (EnqueuedDelivery, (self.seq,))


@attrs.frozen
class OutboxInsert(Op):
    """Insert one outbox row, assigning the next per-session ``seq`` from ``sessions.last_seq``.

    *values* maps outbox columns (all but ``seq``) to values; it must hold ``delivery_id``,
    ``session_id``, ``status`` and ``created_at``. ``status`` is ``queued``; ``sent`` for an
    invisible history-only send; or ``sending`` for a delivery claimed in the same transaction
    (its session was idle and its route is about to be called: the claim is still the last
    write before that row's platform I/O). Appends ``delivery.queued``, then ``delivery.sent``
    or ``delivery.sending`` accordingly, then ``extra_events`` (``(type, data_json)`` pairs).
    Raises :class:`ConflictError` for an unknown session. Result: :class:`EnqueuedDelivery`.
    """

    values: Mapping[str, Any]
    extra_events: tuple[tuple[str, str], ...] = ()

    def __reduce__(self) -> tuple[Any, ...]:  # see InsertRows.__reduce__
        return (OutboxInsert, (self.values, self.extra_events))

    def group_key(self) -> Hashable:
        return ("outbox_insert", tuple(self.values))

    def footprint(self) -> Iterable[tuple[str, Any]]:
        return [("outbox", self.values["delivery_id"]), ("sessions", self.values["session_id"])]

    @classmethod
    def run_group(cls, conn: Any, ops: Sequence[Op]) -> list[Any]:
        inserts: list[OutboxInsert] = list(ops)  # type: ignore[arg-type]
        wanted = Counter(op.values["session_id"] for op in inserts)
        last_seq = _reserve_seqs(conn, wanted)
        next_seq = {sid: last_seq[sid] - n for sid, n in wanted.items()}
        seqs = []
        for op in inserts:
            sid = op.values["session_id"]
            next_seq[sid] += 1
            seqs.append(next_seq[sid])
        columns = (*inserts[0].values, "seq")
        rows = [(*op.values.values(), seq) for op, seq in zip(inserts, seqs, strict=True)]
        _insert_many(conn, "outbox", columns, rows)
        ids = [op.values["delivery_id"] for op in inserts]
        _insert_events_from_outbox(conn, "delivery.queued", ids,
                                   "json_object('seq', o.seq, 'kind', o.kind)")
        for status, event_type, data in (
                ("sent", "delivery.sent", "json_object('attempt', o.attempts, 'visible', "
                                          "json('false'))"),
                ("sending", "delivery.sending", "json_object('attempt', o.attempts, "
                                                "'claimant', o.claimant, 'error', NULL)")):
            chosen = [op.values["delivery_id"] for op in inserts if op.values["status"] == status]
            if chosen:
                _insert_events_from_outbox(conn, event_type, chosen, data)
        extras = [(kind, op.values["session_id"], op.values["delivery_id"], payload,
                   op.values["created_at"]) for op in inserts for kind, payload in op.extra_events]
        if extras:
            _insert_many(conn, "events", _EVENT_NAMES, extras)
        return [EnqueuedDelivery(seq) for seq in seqs]


@attrs.frozen
class AppliedTransition:
    """The outcome of one :class:`Transition`: whether it applied, and the row's attempts."""

    applied: bool
    attempts: int = 0

    def __reduce__(self) -> tuple[Any, ...]:  # answers cross the writer process's pipe
        return (AppliedTransition, (self.applied, self.attempts))


@attrs.frozen
class Transition(Op):
    """Move one outbox row (and its work item) to *to*, if its status allows it.

    Build it with :func:`transition`. ``error`` sets ``last_error`` (``None`` keeps the old one);
    ``claimant`` / ``lease_expires_at`` are recorded by ``sending``; ``extra_events`` are
    ``(type, data)`` pairs appended after the main event, also only when the move applied.
    ``only_from`` narrows the allowed sources (empty: all of :data:`TRANSITIONS`), so a caller
    that means one particular move (reconcile resolving ``unknown``) cannot make another.
    Result: :class:`AppliedTransition`.
    """

    delivery_id: str
    to: str
    now: float
    error: str | None = None
    claimant: str | None = None
    lease_expires_at: float | None = None
    extra_events: tuple[tuple[str, str], ...] = ()
    only_from: tuple[str, ...] = ()

    def __reduce__(self) -> tuple[Any, ...]:  # see InsertRows.__reduce__
        return (Transition, (self.delivery_id, self.to, self.now, self.error, self.claimant,
                             self.lease_expires_at, self.extra_events, self.only_from))

    def group_key(self) -> Hashable:
        return ("transition", self.to, self.only_from)

    def footprint(self) -> Iterable[tuple[str, Any]]:
        return [("outbox", self.delivery_id)]

    @classmethod
    def run_group(cls, conn: Any, ops: Sequence[Op]) -> list[Any]:
        moves: list[Transition] = list(ops)  # type: ignore[arg-type]
        to = moves[0].to
        sources, work_status, event_type = TRANSITIONS[to]
        sources = moves[0].only_from or sources
        applied: dict[str, tuple[Any, ...]] = {}
        for chunk in _unique_chunks(moves):
            applied.update(_apply_outbox(conn, to, sources, chunk))
        if not applied:
            return [AppliedTransition(False) for _ in moves]
        _apply_work(conn, to, work_status, [m for m in moves if m.delivery_id in applied],
                    applied)
        if to == "failed":
            _rewrite_failure_history(conn, list(applied), moves[0].now)
        data = ("json_object('attempt', o.attempts, 'claimant', o.claimant, "
                "'error', o.last_error)")
        _insert_events_from_outbox(conn, event_type, list(applied), data)
        extras = [(kind, applied[move.delivery_id][2], move.delivery_id, payload, move.now)
                  for move in moves if move.delivery_id in applied
                  for kind, payload in move.extra_events]
        if extras:
            _insert_many(conn, "events", _EVENT_NAMES, extras)
        results = []
        seen: set[str] = set()
        for move in moves:
            row = applied.get(move.delivery_id)
            if row is None or move.delivery_id in seen:
                results.append(AppliedTransition(False))
                continue
            seen.add(move.delivery_id)
            results.append(AppliedTransition(True, row[3]))
        return results


def transition(delivery_id: str, to: str, *, now: float, error: str | None = None,
               claimant: str | None = None, lease_expires_at: float | None = None,
               extra_events: Iterable[tuple[str, Mapping[str, Any]]] = (),
               only_from: Iterable[str] = ()) -> Transition:
    """Build a :class:`Transition`, checking *to* names a state the machine has and
    *only_from* names only legal sources of that move."""
    if to not in TRANSITIONS:
        raise ValueError(f"to: no transition into {to!r}")
    narrowed = tuple(only_from)
    illegal = [source for source in narrowed if source not in TRANSITIONS[to][0]]
    if illegal:
        raise ValueError(f"only_from: {illegal[0]!r} -> {to!r} is not a legal move")
    return Transition(delivery_id, to, now, error, claimant, lease_expires_at,
                      tuple((kind, json.dumps(dict(data))) for kind, data in extra_events),
                      narrowed)


def end_stale_progress(delivery_ids: Iterable[str], left: str, *, now: float
                       ) -> list[Transition]:
    """The moves that end *delivery_ids*, progress notes left *left* (``unknown`` or
    ``unrouted``), ``failed`` with ``stale_progress`` by way of ``queued`` in one write (no lane
    sees them queued): two per id, in order, so the results of the second ones
    (``results[1::2]``) say which ended. Late, a "working on it" is noise: a client's
    ``after_seq``, a hand-back and recovery at open end them so."""
    moves: list[Transition] = []
    for delivery_id in delivery_ids:
        moves.append(transition(delivery_id, "queued", now=now, only_from=(left,)))
        moves.append(transition(delivery_id, "failed", now=now, error="stale_progress",
                                only_from=("queued",)))
    return moves


def _reserve_seqs(conn: Any, wanted: Counter[str]) -> dict[str, int]:
    items = list(wanted.items())
    values = ",".join(["(?, ?)"] * len(items))
    params = [value for item in items for value in item]
    rows = conn.execute(
        f"UPDATE sessions SET last_seq = last_seq + v.column2 FROM (VALUES {values}) AS v "
        "WHERE sessions.session_id = v.column1 RETURNING sessions.session_id, sessions.last_seq",
        params).fetchall()
    found = dict(rows)
    missing = [sid for sid in wanted if sid not in found]
    if missing:
        raise ConflictError(f"session_id: no session {missing[0]!r}")
    return found


def _insert_many(conn: Any, table: str, columns: Sequence[str],
                 rows: Sequence[tuple[Any, ...]]) -> None:
    per_statement = max(1, 30_000 // len(columns))
    row_sql = "(" + ",".join("?" * len(columns)) + ")"
    for start in range(0, len(rows), per_statement):
        chunk = rows[start:start + per_statement]
        conn.execute(f"INSERT INTO {table} ({','.join(columns)}) VALUES "
                     + ",".join([row_sql] * len(chunk)),
                     [value for row in chunk for value in row])


def _insert_events_from_outbox(conn: Any, event_type: str, delivery_ids: Sequence[str],
                               data_sql: str) -> None:
    """Append one *event_type* event per delivery, its data computed in SQL from the row."""
    for start in range(0, len(delivery_ids), 30_000):
        chunk = delivery_ids[start:start + 30_000]
        values = ",".join(["(?)"] * len(chunk))
        conn.execute(
            f"INSERT INTO events {_EVENT_COLUMNS} "
            f"SELECT ?, o.session_id, o.delivery_id, {data_sql}, o.updated_at "
            f"FROM (VALUES {values}) AS v JOIN outbox AS o ON o.delivery_id = v.column1",
            [event_type, *chunk])

def _unique_chunks(moves: Sequence[Transition]) -> Iterable[list[Transition]]:
    """Split *moves* so no statement touches a row twice (later moves see earlier ones)."""
    chunk: list[Transition] = []
    seen: set[str] = set()
    for move in moves:
        if move.delivery_id in seen or len(chunk) >= 5_000:
            yield chunk
            chunk, seen = [], set()
        chunk.append(move)
        seen.add(move.delivery_id)
    if chunk:
        yield chunk


def _apply_outbox(conn: Any, to: str, sources: Sequence[str],
                  moves: Sequence[Transition]) -> dict[str, tuple[Any, ...]]:
    sets = ["status = ?", "updated_at = v.column2", "last_error = COALESCE(v.column3, last_error)"]
    if to == "sending":
        sets += ["claimant = v.column4", "lease_expires_at = v.column5", "attempts = attempts + 1"]
    elif to in ("sent", "failed", "unknown", "unrouted"):
        sets.append("lease_expires_at = NULL")
    elif to == "queued":
        sets += ["claimant = NULL", "lease_expires_at = NULL"]
    values = ",".join(["(?, ?, ?, ?, ?)"] * len(moves))
    params: list[Any] = [to]
    for move in moves:
        params += [move.delivery_id, move.now, move.error, move.claimant, move.lease_expires_at]
    params += sources
    marks = ",".join("?" * len(sources))
    rows = conn.execute(
        f"UPDATE outbox SET {', '.join(sets)} FROM (VALUES {values}) AS v "
        f"WHERE outbox.delivery_id = v.column1 AND outbox.status IN ({marks}) "
        "RETURNING outbox.delivery_id, outbox.work_id, outbox.session_id, outbox.attempts, "
        "outbox.updated_at, outbox.last_error, outbox.claimant, outbox.lease_expires_at",
        params).fetchall()
    return {row[0]: row for row in rows}


def _apply_work(conn: Any, to: str, work_status: str, moves: Sequence[Transition],
                applied: Mapping[str, tuple[Any, ...]]) -> None:
    values = ",".join(["(?, ?, ?, ?, ?, ?)"] * len(moves))
    params: list[Any] = [work_status]
    for move in moves:
        row = applied[move.delivery_id]
        params += [row[1], row[4], row[5], row[6], row[7], row[3]]
    conn.execute(
        "UPDATE work_items SET status = ?, updated_at = v.column2, last_error = v.column3, "
        "claimant = v.column4, lease_expires_at = v.column5, attempts = v.column6 "
        f"FROM (VALUES {values}) AS v WHERE work_items.work_id = v.column1", params)


def _rewrite_failure_history(conn: Any, delivery_ids: Sequence[str], now: float) -> None:
    """On a delivery's first failure only, replace its history text with its failure text."""
    values = ",".join(["(?)"] * len(delivery_ids))
    conn.execute(
        "UPDATE messages SET text = o.failure_history_text, failure_rewritten = 1, updated_at = ? "
        f"FROM (VALUES {values}) AS v JOIN outbox AS o ON o.delivery_id = v.column1 "
        "WHERE messages.message_id = o.history_message_id "
        "AND o.failure_history_text IS NOT NULL AND messages.failure_rewritten = 0",
        [now, *delivery_ids])
