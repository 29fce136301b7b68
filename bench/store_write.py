"""Group-commit writer throughput against plain sqlite3 baselines measured in the same run.

Every variant writes the same rows: real ``outbox`` rows (the table tidings writes most, with its
indexes, created by the real migrations). Prints rows/s for:
  (a) one commit per row on a plain connection (WAL, synchronous=FULL),
  (b) the tidings writer with 1, 16 and 256 concurrent callers, and the ratio b/a,
  (c) a raw batched insert on a plain connection (256 rows per transaction),
each the median of three interleaved rounds. Targets: at 256 callers, b >= 8x a and b >= c/2.

    .venv/bin/python bench/store_write.py [--rows N] [--rounds R]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sqlite3
import statistics
import tempfile
import time

import trio
from _args import at_least

from tidings.store import InsertRows, open_store
from tidings.store._connect import connect_writer
from tidings.store._schema import migrate

COLUMNS = ("delivery_id", "session_id", "seq", "owner_turn_id", "work_id", "kind", "channel",
           "text", "blocks", "metadata", "visible", "status", "created_at", "updated_at")
INSERT = f"INSERT INTO outbox ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
TEXT = "The nightly build finished: 412 tests passed, 0 failed; artifacts are uploaded."


def _new_id() -> str:
    """A random 32-hex id, as cheap as the runtime's own ids (``uuid4().hex`` would make the
    harness, not the store, a large part of every variant's time)."""
    return os.urandom(16).hex()


def outbox_row(i: int) -> tuple[object, ...]:
    now = time.time()
    session = f"session_{i % 100:04d}"
    blocks = json.dumps([{"type": "text", "text": TEXT}])
    return (_new_id(), session, i, _new_id(), _new_id(), "message", "web",
            TEXT, blocks, "{}", 1, "queued", now, now)


def _plain(path: pathlib.Path) -> sqlite3.Connection:
    conn = connect_writer(path, "FULL")
    migrate(conn)
    return conn


def commit_per_row(path: pathlib.Path, rows: int) -> float:
    conn = _plain(path)
    start = time.perf_counter()
    for i in range(rows):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(INSERT, outbox_row(i))
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return rows / elapsed


def raw_batched(path: pathlib.Path, rows: int, per_tx: int = 256) -> float:
    conn = _plain(path)
    start = time.perf_counter()
    for base in range(0, rows, per_tx):
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(INSERT, [outbox_row(i) for i in range(base, min(rows, base + per_tx))])
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return rows / elapsed


async def writer(path: pathlib.Path, rows: int, callers: int) -> float:
    async with open_store(path) as store:
        per_caller = rows // callers

        async def caller(n: int) -> None:
            for i in range(n * per_caller, (n + 1) * per_caller):
                await store.commit([InsertRows("outbox", COLUMNS, (outbox_row(i),))])

        start = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for n in range(callers):
                nursery.start_soon(caller, n)
        elapsed = time.perf_counter() - start
    return per_caller * callers / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=at_least(256, "one per caller at 256 callers"), default=4096)
    parser.add_argument("--rounds", type=at_least(1), default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            def fresh(name: str) -> pathlib.Path:
                return pathlib.Path(tmp) / f"{name}-{round_}.db"  # noqa: B023

            results.setdefault("a", []).append(commit_per_row(fresh("a"), args.rows // 4))
            for callers in (1, 16, 256):
                results.setdefault(f"b{callers}", []).append(
                    trio.run(writer, fresh(f"b{callers}"), args.rows, callers))
            results.setdefault("c", []).append(raw_batched(fresh("c"), args.rows))
    med = {key: statistics.median(values) for key, values in results.items()}
    print(f"(a) one commit per row, plain sqlite3     {med['a']:10.0f} rows/s")
    for callers in (1, 16, 256):
        b = med[f"b{callers}"]
        print(f"(b) writer, {callers:3d} concurrent callers       {b:10.0f} rows/s"
              f"   b/a = {b / med['a']:5.1f}x   b/c = {b / med['c']:4.2f}")
    print(f"(c) raw batched, 256 rows per transaction  {med['c']:10.0f} rows/s")
    b256 = med["b256"]
    ok = b256 >= 8 * med["a"] and b256 >= 0.5 * med["c"]
    print(f"target at 256 callers (>= 8x a and >= c/2): {'met' if ok else 'NOT met'}")


if __name__ == "__main__":
    main()
