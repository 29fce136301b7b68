"""Merged group commit must mean exactly what running the requests one by one means."""

from __future__ import annotations

import sqlite3

from hypothesis import given, settings
from hypothesis import strategies as st

from tidings.errors import ConflictError
from tidings.store import Execute, InsertRows, UpdateRows, plan_segments
from tidings.store._batch import _plan_general, _single_segment, execute_batch

KEYS = st.sampled_from(["a", "b", "c", "d"])
VALUES = st.sampled_from(["queued", "sending", "sent"])

insert = st.builds(lambda k, v: InsertRows("kv", ("k", "v"), ((k, v),)), KEYS, VALUES)
append = st.builds(lambda v: InsertRows("log", ("v",), ((v,),), key_index=None), VALUES)
update = st.builds(
    lambda k, v, guard: UpdateRows("kv", "k", ("v",), ((k, v),), exprs=(("n", "n + 1"),),
                                   guard="v = ?" if guard else "",
                                   guard_params=(guard,) if guard else ()),
    KEYS, VALUES, st.none() | VALUES)
solo = st.builds(lambda k: Execute("UPDATE kv SET v = v || '!' WHERE k = ?", (k,)), KEYS)
requests = st.lists(st.lists(st.one_of(insert, append, update, solo), min_size=1, max_size=4),
                    min_size=1, max_size=12)


def _fresh() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT, n INTEGER DEFAULT 0)")
    conn.execute("CREATE TABLE log (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)")
    return conn


def _state(conn: sqlite3.Connection) -> tuple[list[tuple], list[tuple]]:
    return (conn.execute("SELECT * FROM kv ORDER BY k").fetchall(),
            conn.execute("SELECT * FROM log ORDER BY id").fetchall())


def _one_by_one(conn: sqlite3.Connection, batch) -> list[object]:
    outcomes: list[object] = []
    conn.execute("BEGIN")
    for ops in batch:
        conn.execute("SAVEPOINT r")
        try:
            outcomes.append([type(op).run_group(conn, [op])[0] for op in ops])
        except sqlite3.IntegrityError:
            conn.execute("ROLLBACK TO r")
            outcomes.append(ConflictError)
        conn.execute("RELEASE r")
    conn.execute("COMMIT")
    return outcomes


@settings(max_examples=300, deadline=None)
@given(requests)
def test_merged_batches_equal_sequential_execution(batch) -> None:
    expected_conn, actual_conn = _fresh(), _fresh()
    expected = _one_by_one(expected_conn, batch)
    outcome = execute_batch(actual_conn, batch)
    actual = [type(error) if error is not None else result
              for result, error in zip(outcome.results, outcome.errors, strict=True)]
    assert actual == expected
    assert _state(actual_conn) == _state(expected_conn)


def test_identical_requests_merge_into_one_statement_per_table() -> None:
    batch = [[InsertRows("kv", ("k", "v"), ((f"k{i}", "queued"),)),
              InsertRows("log", ("v",), (("queued",),), key_index=None)] for i in range(50)]
    [segment] = plan_segments(batch)
    assert len(segment) == 2
    outcome = execute_batch(_fresh(), batch)
    assert outcome.merged
    assert outcome.statements == 2


def test_a_claim_after_a_later_insert_of_the_same_row_splits_the_batch() -> None:
    claim = UpdateRows("kv", "k", ("v",), (("a", "sending"),), guard="v = 'queued'")
    batch = [[claim], [InsertRows("kv", ("k", "v"), (("a", "queued"),))], [claim]]
    conn = _fresh()
    outcome = execute_batch(conn, batch)
    assert [r for r in outcome.results] == [[set()], [None], [{"a"}]]
    assert _state(conn)[0] == [("a", "sending", 0)]


@settings(max_examples=300, deadline=None)
@given(requests)
def test_the_one_pass_plan_is_the_general_plan_when_it_applies(batch) -> None:
    """The fast path is conservative (it may decline a batch the general planner keeps whole)
    but never disagrees with it."""
    fast = _single_segment(batch)
    if fast is not None:
        assert fast == _plan_general(batch)
