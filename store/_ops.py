"""Write operations as data, so the writer can merge a whole batch into a few statements.

A write request is a sequence of ops. The writer groups the ops of every request in a batch by
:meth:`Op.group_key` and runs each group with one call of its :meth:`Op.run_group`, which is where
multi-row statements come from: 256 concurrent sends become one ``INSERT ... VALUES (...), (...)``
per table instead of 256 ``execute`` calls. That matters beyond statement overhead: each
``execute`` releases and re-takes the GIL, and a busy trio loop makes every re-take slow.

Ops with ``group_key() is None`` are never merged (:class:`Execute`, :class:`Call`).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any

import attrs

__all__ = ["Call", "Execute", "InsertRows", "Op", "UpdateRows", "run_request"]

# SQLite >= 3.32 allows 32766 host parameters per statement; stay clear of it.
_MAX_PARAMS = 30_000


class Op:
    """Base class of write operations (see the module docstring)."""

    def group_key(self) -> Hashable | None:
        """Ops with equal keys in one batch may run as one group; ``None`` never merges."""
        return None

    def footprint(self) -> Iterable[tuple[str, Any]] | None:
        """The ``(table, primary key)`` rows this op writes; ``None`` if it cannot say.

        The writer uses it to keep merged execution equivalent to running the requests one by
        one: an op never joins a group that runs before an earlier write to one of its rows.
        ``()`` means "only appends rows nobody else addresses" (for instance events).
        """
        return None

    @classmethod
    def run_group(cls, conn: sqlite3.Connection, ops: Sequence[Op]) -> list[Any]:
        """Run *ops* (all with one group key) and return one result per op, in order."""
        raise NotImplementedError


@attrs.frozen
class InsertRows(Op):
    """Insert *rows* into *table*; ``conflict`` is ``""``, ``"OR IGNORE"`` or ``"OR REPLACE"``.

    Result: ``None``.
    """

    table: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    conflict: str = ""
    key_index: int | None = 0

    def __reduce__(self) -> tuple[Any, ...]:
        # The writer process pickles every op it is sent: a plain constructor call pickles in
        # half the time of attrs' generic state protocol.
        return (InsertRows, (self.table, self.columns, self.rows, self.conflict, self.key_index))
    """Which column is the primary key (``None``: rows are append-only, e.g. events)."""

    def group_key(self) -> Hashable:
        return ("insert", self.table, self.columns, self.conflict)

    def footprint(self) -> Iterable[tuple[str, Any]]:
        if self.key_index is None:
            return ()
        index = self.key_index
        return [(self.table, row[index]) for row in self.rows]

    @classmethod
    def run_group(cls, conn: sqlite3.Connection, ops: Sequence[Op]) -> list[Any]:
        first = ops[0]
        assert isinstance(first, InsertRows)
        rows = [row for op in ops for row in op.rows]  # type: ignore[attr-defined]
        width = len(first.columns)
        per_statement = max(1, _MAX_PARAMS // width)
        for start in range(0, len(rows), per_statement):
            chunk = rows[start:start + per_statement]
            sql = _insert_sql(first.table, first.columns, first.conflict, len(chunk))
            conn.execute(sql, [value for row in chunk for value in row])
        return [None] * len(ops)


@attrs.frozen
class UpdateRows(Op):
    """Update rows of *table* by *key*: ``SET col = new value`` for each of *columns*.

    Each row of *rows* is ``(key, value_1, ..., value_n)``; *key* must be the table's primary key
    (the writer's merge-safety check reasons about rows by it). ``exprs`` are extra
    ``(column, sql_expression)`` assignments evaluated against the old row (for instance
    ``("attempts", "attempts + 1")``); ``guard`` is an SQL condition on the old row with
    ``guard_params``, so a state-machine transition only applies from the expected state.

    Result: the set of keys of this op that were actually updated (the guard held).
    """

    table: str
    key: str
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]
    exprs: tuple[tuple[str, str], ...] = ()
    guard: str = ""
    guard_params: tuple[Any, ...] = ()

    def group_key(self) -> Hashable:
        return ("update", self.table, self.key, self.columns, self.exprs, self.guard,
                self.guard_params)

    def footprint(self) -> Iterable[tuple[str, Any]]:
        return [(self.table, row[0]) for row in self.rows]

    @classmethod
    def run_group(cls, conn: sqlite3.Connection, ops: Sequence[Op]) -> list[Any]:
        first = ops[0]
        assert isinstance(first, UpdateRows)
        width = len(first.columns) + 1
        per_statement = max(1, (_MAX_PARAMS - len(first.guard_params)) // width)
        results: list[set[Any]] = [set() for _ in ops]
        # One statement may touch each key once, or merging would change the meaning:
        # a repeated key starts the next statement. ``owner`` maps a key to its op's index.
        pending: list[tuple[Any, ...]] = []
        owner: dict[Any, int] = {}

        def flush() -> None:
            for start in range(0, len(pending), per_statement):
                chunk = pending[start:start + per_statement]
                sql = _update_sql(first, len(chunk))
                params = [value for row in chunk for value in row]
                params.extend(first.guard_params)
                for (key,) in conn.execute(sql, params).fetchall():
                    results[owner[key]].add(key)
            pending.clear()
            owner.clear()

        for index, op in enumerate(ops):
            for row in op.rows:  # type: ignore[attr-defined]
                if row[0] in owner:
                    flush()
                pending.append(row)
                owner[row[0]] = index
        flush()
        return results


@attrs.frozen
class Execute(Op):
    """One statement with parameters, never merged. Result: ``cursor.fetchall()``.

    Not ``COMMIT`` or ``ROLLBACK``: it runs inside the writer's transaction (see :class:`Call`).
    """

    sql: str
    params: Sequence[Any] = ()

    @classmethod
    def run_group(cls, conn: sqlite3.Connection, ops: Sequence[Op]) -> list[Any]:
        return [conn.execute(op.sql, op.params).fetchall() for op in ops]  # type: ignore[attr-defined]


@attrs.frozen
class Call(Op):
    """Run ``fn(conn)`` in the write transaction, never merged. Result: what *fn* returns.

    *fn* runs in the writer thread and may be re-run after a rollback (when a neighbour in its
    batch fails), so it must act only through *conn*, and leave the transaction to the writer:
    ``conn.commit()``, ``conn.rollback()`` and ``conn.executescript()`` (which commits first)
    raise :class:`StoreError` (raise to have this write rolled back alone), and a ``COMMIT`` or
    ``ROLLBACK`` statement leaves every write of its batch "may or may not have committed".
    """

    fn: Callable[[sqlite3.Connection], Any]

    @classmethod
    def run_group(cls, conn: sqlite3.Connection, ops: Sequence[Op]) -> list[Any]:
        return [op.fn(conn) for op in ops]  # type: ignore[attr-defined]


def run_request(conn: sqlite3.Connection, ops: Sequence[Op]) -> list[Any]:
    """Run one request's ops in order, unmerged. Returns one result per op."""
    return [type(op).run_group(conn, [op])[0] for op in ops]


@functools.lru_cache(maxsize=1024)
def _insert_sql(table: str, columns: tuple[str, ...], conflict: str, n: int) -> str:
    row = "(" + ",".join("?" * len(columns)) + ")"
    return (f"INSERT {conflict} INTO {table} ({','.join(columns)}) VALUES "
            + ",".join([row] * n))


@functools.lru_cache(maxsize=1024)
def _update_sql_cached(table: str, key: str, columns: tuple[str, ...],
                       exprs: tuple[tuple[str, str], ...], guard: str, n: int) -> str:
    row = "(" + ",".join("?" * (len(columns) + 1)) + ")"
    sets = [f"{col} = v.column{i + 2}" for i, col in enumerate(columns)]
    sets.extend(f"{col} = {expr}" for col, expr in exprs)
    where = f"{table}.{key} = v.column1"
    if guard:
        where += f" AND ({guard})"
    return (f"UPDATE {table} SET {', '.join(sets)} FROM (VALUES {','.join([row] * n)}) AS v "
            f"WHERE {where} RETURNING {table}.{key}")


def _update_sql(op: UpdateRows, n: int) -> str:
    return _update_sql_cached(op.table, op.key, op.columns, op.exprs, op.guard, n)
