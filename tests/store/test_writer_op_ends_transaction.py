"""An op that ends the writer's transaction itself (a ``Call`` whose function calls
``conn.commit()``, the sqlite3 habit, or ``conn.rollback()``; an ``Execute("COMMIT")``) must not
make the writer break its promises to the other writes of the batch.

The writer took the batch's final COMMIT failing ("no transaction is active") for an ordinary
failure, and ran every request again, one savepoint each: what the early commit had already
written was written twice (an increment applied twice), or conflicted with itself, so writes
that had committed were told ``ConflictError`` (nothing written).
"""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
import trio

from tidings.errors import StoreError
from tidings.store import Call, Execute, InsertRows, open_store


def _commit_inside(conn: sqlite3.Connection) -> str:
    conn.execute("INSERT INTO kv VALUES ('call', 'v')")
    conn.commit()
    return "done"


def _roll_back_inside(conn: sqlite3.Connection) -> str:
    conn.execute("INSERT INTO kv VALUES ('call', 'v')")
    conn.rollback()
    return "done"


def _commit_then_raise(conn: sqlite3.Connection) -> str:
    conn.execute("INSERT INTO kv VALUES ('call', 'v')")
    conn.commit()
    raise ValueError("after its commit")


ENDINGS = {
    "a Call that commits": lambda: [Call(_commit_inside)],
    "a Call that rolls back": lambda: [Call(_roll_back_inside)],
    "a Call that commits, then raises": lambda: [Call(_commit_then_raise)],
    "an Execute of COMMIT": lambda: [InsertRows("kv", ("k", "v"), (("call", "v"),)),
                                     Execute("COMMIT")],
}


@pytest.mark.parametrize("writer", ["thread", "process"])
@pytest.mark.parametrize("ending", ENDINGS.values(), ids=ENDINGS.keys())
async def test_an_op_that_ends_the_transaction_breaks_no_promise_to_its_batch(
        tmp_path, writer, ending) -> None:
    heard: dict[str, Any] = {}
    all_heard = trio.Event()
    requests = {
        "a": [InsertRows("kv", ("k", "v"), (("a", "v"),))],
        "inc": [Execute("UPDATE counter SET n = n + 1 WHERE id = 1")],
        "call": ending(),
        "b": [InsertRows("kv", ("k", "v"), (("b", "v"),))],
    }

    def callbacks(name: str) -> dict[str, Any]:
        def tell(what: object) -> None:
            assert name not in heard, f"{name} heard twice"
            heard[name] = what
            if len(heard) == len(requests):
                all_heard.set()

        return {"on_commit": lambda results: tell("committed"), "on_error": tell}

    with trio.fail_after(30):  # hang guard (real time: the process writer's child)
        async with open_store(tmp_path / "a.db", writer=writer) as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            await store.commit([Execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n)")])
            await store.commit([Execute("INSERT INTO counter VALUES (1, 0)")])
            for name, ops in requests.items():  # no checkpoint between: one batch
                store.commit_nowait(ops, **callbacks(name))
            await all_heard.wait()
            keys = {k for (k,) in await store.read(
                lambda c: c.execute("SELECT k FROM kv").fetchall())}
            [[(n,)]] = await store.commit([Execute("SELECT n FROM counter")])
            # The writer goes on, in transactions of its own again.
            await store.commit([InsertRows("kv", ("k", "v"), (("after", "v"),))])
            assert await store.commit([Call(lambda c: c.in_transaction)]) == [True]
    assert n in (0, 1), "an increment was applied twice"
    for name in ("a", "b", "call"):
        what = heard[name]
        if what == "committed":
            assert name in keys, f"{name} was told it committed, and is not there"
        else:
            assert isinstance(what, StoreError)
            if "may or may not have committed" not in str(what):
                assert name not in keys, f"{name} was told {what!r}, and is there"
    if heard["inc"] == "committed":
        assert n == 1
    elif "may or may not have committed" not in str(heard["inc"]):
        assert n == 0


async def _batch_around(store, call_ops: list) -> dict[str, Any]:
    """Commit a, an increment, *call_ops* and b as one batch; what each heard."""
    heard: dict[str, Any] = {}
    all_heard = trio.Event()
    requests = {"a": [InsertRows("kv", ("k", "v"), (("a", "v"),))],
                "inc": [Execute("UPDATE counter SET n = n + 1 WHERE id = 1")],
                "call": call_ops,
                "b": [InsertRows("kv", ("k", "v"), (("b", "v"),))]}

    def tell(name: str, what: object) -> None:
        heard[name] = what
        if len(heard) == len(requests):
            all_heard.set()

    for name, ops in requests.items():  # no checkpoint between: one batch
        store.commit_nowait(ops, on_commit=lambda _, name=name: tell(name, "committed"),
                            on_error=lambda error, name=name: tell(name, error))
    await all_heard.wait()
    return heard


@pytest.mark.parametrize("writer", ["thread", "process"])
@pytest.mark.parametrize("method", [_commit_inside, _roll_back_inside, _commit_then_raise])
async def test_a_call_that_commits_or_rolls_back_by_habit_fails_alone(
        tmp_path, writer, method) -> None:
    with trio.fail_after(30):  # hang guard (real time: the process writer's child)
        async with open_store(tmp_path / "a.db", writer=writer) as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            await store.commit([Execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n)")])
            await store.commit([Execute("INSERT INTO counter VALUES (1, 0)")])
            heard = await _batch_around(store, [Call(method)])
            assert {name: heard[name] for name in ("a", "inc", "b")} \
                == dict.fromkeys(("a", "inc", "b"), "committed")
            assert isinstance(heard["call"], StoreError)
            assert "a Call must not call conn." in str(heard["call"])
            assert await store.commit([Execute("SELECT k FROM kv ORDER BY k")]) \
                == [[("a",), ("b",)]]
            assert await store.commit([Execute("SELECT n FROM counter")]) == [[(1,)]]


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_an_execute_of_commit_leaves_its_batch_may_or_may_not_committed(
        tmp_path, writer) -> None:
    with trio.fail_after(30):  # hang guard (real time: the process writer's child)
        async with open_store(tmp_path / "a.db", writer=writer) as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            await store.commit([Execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n)")])
            await store.commit([Execute("INSERT INTO counter VALUES (1, 0)")])
            heard = await _batch_around(store, [Execute("COMMIT")])
            for what in heard.values():
                assert isinstance(what, StoreError)
                assert "may or may not have committed" in str(what)
            assert await store.commit([Execute("SELECT n FROM counter")]) in ([[(0,)]], [[(1,)]])


def _create_by_script(conn: sqlite3.Connection) -> None:
    conn.executescript("CREATE TABLE t1 (x); CREATE TABLE t2 (y);")


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_a_call_that_runs_a_script_fails_alone_and_writes_nothing(
        tmp_path, writer) -> None:
    # executescript() commits a pending transaction first: the writer's, mid-batch.
    with trio.fail_after(30):  # hang guard (real time: the process writer's child)
        async with open_store(tmp_path / "a.db", writer=writer) as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            await store.commit([Execute("CREATE TABLE counter (id INTEGER PRIMARY KEY, n)")])
            await store.commit([Execute("INSERT INTO counter VALUES (1, 0)")])
            heard = await _batch_around(store, [Call(_create_by_script)])
            assert {name: heard[name] for name in ("a", "inc", "b")} \
                == dict.fromkeys(("a", "inc", "b"), "committed")
            assert isinstance(heard["call"], StoreError)
            assert "conn.executescript()" in str(heard["call"])
            assert await store.commit([Execute(
                "SELECT name FROM sqlite_master WHERE name IN ('t1', 't2')")]) == [[]]
