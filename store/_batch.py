"""Group commit, thread side: run a batch of write requests in one transaction.

The fast path merges the ops of all requests (see ``_ops``) and commits once. If anything in it
fails, the transaction is rolled back and the batch is run again with one savepoint per request,
so a failing request fails alone and its neighbours still commit. Everything here is blocking and
runs in the writer's worker thread; it touches no trio object.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Hashable, Sequence
from typing import Any

import attrs

from tidings.store._errors import ConflictError, StoreError, ValidationError
from tidings.store._ops import Call, Op, run_request

__all__ = ["BatchOutcome", "execute_batch", "plan_segments"]

Segment = dict[Hashable, list[tuple[int, int]]]
"""Group key -> ``(request index, op index)`` members, in execution order."""


@attrs.define
class BatchOutcome:
    """Per request, either a result list or an exception; plus how the batch ran."""

    results: list[list[Any] | None]
    errors: list[BaseException | None]
    merged: bool
    statements: int = 0


def plan_segments(requests: Sequence[Sequence[Op]]) -> list[Segment]:
    """Split *requests* into segments whose merged execution equals running them in order.

    Within a segment each group runs once, in order of first appearance. An op may join an
    existing group only if no op placed in a later group has already written one of its rows;
    an op that cannot name its rows acts as a barrier. Otherwise a new segment starts.
    """
    fast = _single_segment(requests)
    return fast if fast is not None else _plan_general(requests)


def _plan_general(requests: Sequence[Sequence[Op]]) -> list[Segment]:
    segments: list[Segment] = []
    state = _SegmentState()
    for r, ops in enumerate(requests):
        placement = state.place(r, ops)
        if placement is None and state.groups:
            segments.append(state.groups)
            state = _SegmentState()
            placement = state.place(r, ops)
        if placement is None:  # conflicts with itself: run it alone, op by op
            placement = [(("solo", r, i), len(state.positions) + i, None)
                         for i in range(len(ops))]
        state.commit(r, placement)
    if state.groups:
        segments.append(state.groups)
    return segments


def _single_segment(requests: Sequence[Sequence[Op]]) -> list[Segment] | None:
    """The common case in one cheap pass: every op can name its rows and no row is written by
    two different groups. Then nothing can conflict, and the plan is one segment with groups in
    order of first appearance (what the general planner yields too). ``None``: not that case.
    """
    groups: Segment = {}
    index: dict[Hashable, int] = {}
    owner: dict[tuple[str, Any], int] = {}
    for r, ops in enumerate(requests):
        for i, op in enumerate(ops):
            key = op.group_key()
            footprint = op.footprint()
            if key is None or footprint is None:
                return None
            position = index.get(key)
            if position is None:
                position = index[key] = len(index)
                groups[key] = [(r, i)]
            else:
                groups[key].append((r, i))
            for row in footprint:
                if owner.setdefault(row, position) != position:
                    return None
    return [groups] if groups else []


Placement = list[tuple[Hashable, int, list[tuple[str, Any]] | None]]


class _SegmentState:
    """The segment being built: its groups, and the latest group position that wrote each row."""

    __slots__ = ("barrier", "groups", "last_write", "max_write", "positions")

    def __init__(self) -> None:
        self.groups: Segment = {}
        self.positions: dict[Hashable, int] = {}
        self.last_write: dict[tuple[str, Any], int] = {}
        self.max_write = -1
        self.barrier = -1

    def place(self, r: int, ops: Sequence[Op]) -> Placement | None:
        """Where each op of request *r* would go, or ``None`` if it cannot join this segment."""
        positions, last_write = self.positions, self.last_write
        fresh: dict[Hashable, int] = {}
        pending: dict[tuple[str, Any], int] = {}
        next_position = len(positions)
        barrier, max_pending = self.barrier, -1
        placement: Placement = []
        for i, op in enumerate(ops):
            key = op.group_key()
            if key is None:
                key = ("solo", r, i)
            position = positions.get(key)
            if position is None:
                position = fresh.get(key)
                if position is None:
                    position = fresh[key] = next_position
                    next_position += 1
            if position < barrier:
                return None
            footprint = op.footprint()
            if footprint is None:
                if self.max_write > position or max_pending > position:
                    return None
                barrier = position
                placement.append((key, position, None))
                continue
            rows = footprint if isinstance(footprint, list) else list(footprint)
            for row in rows:
                if last_write.get(row, -1) > position or pending.get(row, -1) > position:
                    return None
                pending[row] = position
            max_pending = max(max_pending, position)
            placement.append((key, position, rows))
        return placement

    def commit(self, r: int, placement: Placement) -> None:
        groups, positions, last_write = self.groups, self.positions, self.last_write
        for i, (key, position, rows) in enumerate(placement):
            members = groups.get(key)
            if members is None:
                members = groups[key] = []
                positions[key] = position
            members.append((r, i))
            if rows is None:
                self.barrier = max(self.barrier, position)
                continue
            for row in rows:
                if last_write.get(row, -1) < position:
                    last_write[row] = position
            self.max_write = max(self.max_write, position)


def execute_batch(conn: sqlite3.Connection, requests: Sequence[Sequence[Op]]) -> BatchOutcome:
    """Run *requests* in one ``BEGIN IMMEDIATE`` transaction and commit (blocking)."""
    n = len(requests)
    try:
        conn.execute("BEGIN IMMEDIATE")
        results, statements = _run_merged(conn, requests)
        conn.execute("COMMIT")
    except _TransactionEnded as exc:  # not run again: what ran before it may have committed
        _rollback(conn)
        return BatchOutcome([None] * n, [_unknown(exc) for _ in requests], merged=True)
    except Exception as exc:  # noqa: BLE001 - any failure sends the batch to the isolated path
        _rollback(conn)
        if n == 1:
            return BatchOutcome([None], [_request_error(exc, requests[0])], merged=True)
    else:
        return BatchOutcome(list(results), [None] * n, merged=True, statements=statements)
    return _execute_isolated(conn, requests)


def _run_merged(conn: sqlite3.Connection, requests: Sequence[Sequence[Op]]
                ) -> tuple[list[list[Any]], int]:
    results: list[list[Any]] = [[None] * len(ops) for ops in requests]
    statements = 0
    for segment in plan_segments(requests):
        for members in segment.values():
            ops = [requests[r][i] for r, i in members]
            try:
                values = type(ops[0]).run_group(conn, ops)
            except Exception as exc:
                _check_still_open(conn, exc)
                raise
            if not conn.in_transaction:  # (inline: this loop runs for every write)
                raise _TransactionEnded
            statements += 1
            for (r, i), value in zip(members, values, strict=True):
                results[r][i] = value
    return results, statements


def _execute_isolated(conn: sqlite3.Connection, requests: Sequence[Sequence[Op]]) -> BatchOutcome:
    """The slow path: one savepoint per request, so failures stay with their request."""
    n = len(requests)
    results: list[list[Any] | None] = [None] * n
    errors: list[BaseException | None] = [None] * n
    statements = 0
    try:
        conn.execute("BEGIN IMMEDIATE")
        for r, ops in enumerate(requests):
            refusal = _refused(ops)
            if refusal is not None:  # not run at all: iterating it could raise, or consume it
                errors[r] = refusal
                continue
            statements += len(ops)
            conn.execute("SAVEPOINT request")
            try:
                results[r] = run_request(conn, ops)
            except Exception as exc:  # the request fails alone, whatever it raised
                _check_still_open(conn, exc, at=r)
                if not conn.in_transaction:  # SQLite rolled it all back itself (a full disk,
                    raise  # an interrupt): every request failed, with this error, not with
                conn.execute("ROLLBACK TO request")  # "no such savepoint" from this line
                errors[r] = _request_error(exc, ops)
            else:
                _check_still_open(conn, at=r)
            conn.execute("RELEASE request")
        conn.execute("COMMIT")
    except _TransactionEnded as exc:  # by request exc.at: those after it never ran
        _rollback(conn)
        for r in range(n):
            if r > exc.at:
                errors[r] = StoreError("a write batched before this one ended the writer's "
                                       "transaction itself; this write was not run")
            elif errors[r] is None:  # (one that failed alone was rolled back to its savepoint)
                errors[r] = _unknown(exc)
        return BatchOutcome([None] * n, errors, merged=False)
    except Exception as exc:  # noqa: BLE001 - the transaction failed: every request fails
        _rollback(conn)
        return BatchOutcome([None] * n, [_request_error(exc, ops) for ops in requests],
                            merged=False)
    return BatchOutcome(results, errors, merged=False, statements=statements)


class _TransactionEnded(Exception):
    """An op ended the batch's transaction itself: a :class:`Call` or an :class:`Execute` ran
    ``COMMIT`` or ``ROLLBACK`` (``conn.commit()``, the sqlite3 habit, is refused: see
    ``_connect``). What ran before it may have committed (a commit) or not (a rollback), and
    running the batch again, as after any failure, wrote it twice (an increment applied twice)
    and told writes that had committed they had not. So nothing runs after it, and every
    request that ran is answered "may or may not have committed". ``at``: the request being run
    when it was seen (isolated path; the merged one cannot tell)."""

    def __init__(self, at: int = -1) -> None:
        super().__init__("an op of this batch ended the writer's transaction itself (a COMMIT "
                         "or ROLLBACK: ops run inside the writer's transaction and must leave "
                         "it to the writer)")
        self.at = at


def _check_still_open(conn: sqlite3.Connection, exc: Exception | None = None, *,
                      at: int = -1) -> None:
    """Raise :class:`_TransactionEnded` if an op that returned, or raised *exc*, left no
    transaction open. A driver error is not counted: SQLite rolls a transaction back on its own
    after some (a full disk, an interrupt), and then nothing committed. One attribute read per
    op group."""
    if not conn.in_transaction and not isinstance(exc, sqlite3.Error):
        raise _TransactionEnded(at) from exc


def _unknown(exc: _TransactionEnded) -> StoreError:
    error = StoreError(f"{exc}; this write may or may not have committed")
    error.__cause__ = exc
    return error


def _rollback(conn: sqlite3.Connection) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")


def _refused(ops: object) -> ValidationError | None:
    """:class:`ValidationError` naming ``ops`` if *ops* is no sequence of :class:`Op` (one op
    not in a list, a generator, ``None``, a tuple of SQL and parameters) or an op cannot be
    grouped (:func:`_unhashable`), else ``None``.

    Checked only once a batch has failed (such a request always fails the merged run: it is
    not iterable, has no length, cannot be indexed or holds no ops), so a write costs nothing
    more; it then fails alone, by name, instead of raising inside the writer (which stopped
    it, and told batch mates that had committed that they had not)."""
    if not isinstance(ops, Sequence) or isinstance(ops, str | bytes | bytearray):
        got = type(ops).__name__
    else:
        got = next((f"{type(ops).__name__} holding {type(op).__name__}"
                    for op in ops if not isinstance(op, Op)), None)
        if got is None:
            return _unhashable(ops)
    # Types only: a repr could be huge, or raise, and this runs inside the writer.
    return ValidationError("ops", f"must be a list of store ops (Op instances), got {got}")


def _unhashable(ops: Sequence[Op]) -> ValidationError | None:
    """:class:`ValidationError` naming ``ops`` if an op's group key cannot be hashed (a list
    given where a tuple goes: ``columns``, ``exprs``, ``guard_params``): it failed with a bare
    "unhashable type: 'list'"."""
    for op in ops:
        try:
            hash(op.group_key())
        except TypeError as exc:
            return ValidationError("ops", f"{type(op).__name__} holds a list where a tuple "
                                          f"must be (columns, exprs, guard_params): {exc}")
    return None


def _request_error(exc: Exception, ops: Sequence[Op]) -> BaseException:
    """:func:`map_error` for a write request that failed. Only a :class:`Call` can raise on
    purpose; in a request without one, whatever else was raised came from the driver or an op
    (``OverflowError`` for an integer SQLite cannot store, ``UnicodeEncodeError`` for a lone
    surrogate) and is a :class:`StoreError`, as :meth:`Store.commit` documents and as the
    writer process answers it (it sends errors as their class name and text). Ops that are no
    sequence of ops, or whose fields are not what they must be, are refused by name
    (:func:`_refused`)."""
    refusal = _refused(ops)
    if refusal is not None:
        return refusal
    error = map_error(exc)
    if error is exc and not any(isinstance(op, Call) for op in ops):
        error = StoreError(f"{type(exc).__name__}: {exc}")
        error.__cause__ = exc
    return error


def map_error(exc: Exception) -> BaseException:
    """Turn a driver error into the tidings taxonomy (keeping it as ``__cause__``)."""
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, sqlite3.IntegrityError):
        error: StoreError = ConflictError(str(exc))
    elif isinstance(exc, sqlite3.Error):
        error = StoreError(f"{type(exc).__name__}: {exc}")
    else:
        return exc  # a bug or a deliberate raise inside a Call op: keep it as it is
    error.__cause__ = exc
    return error
