"""Recovery at scale: how long a restart takes to settle N rows, and how fast they go out again.

For each size, a database is filled with plain SQL as a dead process would leave it: sessions
of ``--per-session`` rows each, the first half ``sending`` (claimed by the dead epoch), the rest
``queued`` (one in ten a ``progress`` note). Then, with the real runtime:

  open      ``open_runtime(recover="manual")``: the dead claims become ``unknown`` and stale
            progress ``failed`` (in pages; no row cap), measured as the time the open took;
  recover   ``rt.recover()`` with a counting in-memory route bound to every session: every
            session with queued rows is kicked (and reconcile is asked, here of no one);
  dispatch  until every queued row is ``sent``: the re-dispatch rate in rows/s;
  status    the counts and recent rows ``tidings status`` prints, read on the finished database.

Prints figures and the peak RSS (memory stays bounded: every pass works in pages); no
assertions. Also prints the query plans of the recovery reads (each an index search).

    .venv/bin/python bench/recovery.py [--rows 100000,1000000] [--per-session 1000]
                                        [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import logging
import pathlib
import resource
import sqlite3
import tempfile
import time

import trio
from _args import at_least, directory, int_list

import tidings
from tidings.store import open_store, read_database, recovery, status_report

TEXT = "The nightly build finished: 412 tests passed, 0 failed; artifacts are uploaded."
BLOCKS = json.dumps([{"type": "text", "text": TEXT}])


class CountingRoute:
    """Accepts everything and only counts it, so the route holds no memory per delivery."""

    def __init__(self, target: int) -> None:
        self.delivered = 0
        self.target = target
        self.all_delivered = trio.Event()

    async def deliver(self, outbound: object) -> None:
        await trio.lowlevel.checkpoint()
        self.delivered += 1
        if self.delivered >= self.target:
            self.all_delivered.set()


async def create_schema(db: pathlib.Path) -> int:
    """Migrate the database and register the epoch that will be the dead process's."""
    async with open_store(db) as store:
        return store.epoch


def fill(db: pathlib.Path, rows: int, per_session: int, dead: str) -> tuple[int, int, int]:
    """Write the dead process's leftovers; return (sending, queued, progress) counts."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")
    sessions = max(1, rows // per_session)
    now = time.time() - 3600
    counts = [0, 0, 0]
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO sessions (session_id, core_id, channel, last_seq, created_at, updated_at) "
        "VALUES (?, 'default', 'bench', ?, ?, ?)",
        [(f"session_{s:07d}", per_session, now, now) for s in range(sessions)])

    def outbox() -> object:
        for s in range(sessions):
            for seq in range(1, per_session + 1):
                sending = seq <= per_session // 2
                progress = not sending and seq % 10 == 0
                counts[0 if sending else 2 if progress else 1] += 1
                yield (f"dlv_{s:07d}_{seq:07d}", f"session_{s:07d}", seq, f"work_{s:07d}_{seq:07d}",
                       "progress" if progress else "message", "bench", TEXT, BLOCKS, "{}", 1,
                       "sending" if sending else "queued", 1 if sending else 0,
                       dead if sending else None, now, now)

    conn.executemany(
        "INSERT INTO outbox (delivery_id, session_id, seq, work_id, kind, channel, text, blocks, "
        "metadata, visible, status, attempts, claimant, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", outbox())
    conn.execute(
        "INSERT INTO work_items (work_id, kind, subject_id, status, claimant, attempts, "
        "created_at, updated_at) SELECT work_id, 'delivery.send', delivery_id, "
        "CASE status WHEN 'sending' THEN 'claimed' ELSE 'pending' END, claimant, attempts, "
        "created_at, updated_at FROM outbox")
    conn.execute("COMMIT")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return counts[0], counts[1], counts[2]


def plans(db: pathlib.Path) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db)
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    reads = [("dead_claims", lambda: recovery.dead_claims(conn, "epoch:0", 10)),
             ("stale_progress", lambda: recovery.stale_progress(conn, 1.0, 10)),
             ("queued_heads", lambda: recovery.queued_heads(conn, "", 1)),
             ("unknown_sessions", lambda: recovery.unknown_sessions(conn, "", 1)),
             ("unknown_rows", lambda: recovery.unknown_rows(conn, "session_0000000", 0, 10))]
    found = []
    for name, read in reads:
        statements.clear()
        read()
        conn.set_trace_callback(None)
        plan = " / ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statements[0]))
        conn.set_trace_callback(statements.append)
        found.append((name, plan))
    conn.close()
    return found


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run(db: pathlib.Path, queued: int) -> dict[str, float]:
    figures: dict[str, float] = {}
    route = CountingRoute(queued)
    start = time.perf_counter()
    async with tidings.open_runtime(db, workspace=db.parent, recover="manual",
                                    scan_interval=3600) as rt:
        figures["open"] = time.perf_counter() - start
        figures["rss_open"] = rss_mb()
        figures["unknown"] = rt.scanner.totals.unknown
        figures["stale"] = rt.scanner.totals.stale_progress
        sessions = await rt.store.read(
            lambda conn: [row[0] for row in conn.execute("SELECT session_id FROM sessions")])
        for session_id in sessions:
            rt.router.bind(session_id, route)
        start = time.perf_counter()
        report = await rt.recover()
        figures["recover"] = time.perf_counter() - start
        figures["kicked"] = report.queued_sessions
        await route.all_delivered.wait()
        figures["delivered_at"] = time.perf_counter() - start
        while True:  # the last `sent` rows are recorded in the lanes' next commits
            version = rt.bus.version
            counts = await rt.status_counts()
            if counts["queued"] == 0 and counts["sending"] == 0:
                break
            await rt.bus.wait_past(version)
        figures["dispatch"] = time.perf_counter() - start
        figures["sent"] = counts["sent"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int_list(1), default="100000,1000000",
                        help="comma-separated database sizes (rows)")
    parser.add_argument("--per-session", type=at_least(1), default=1000)
    parser.add_argument("--dir", type=directory, default=None,
                        help="where to put the databases (default: tmp)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for rows in args.rows:
            db = pathlib.Path(tmp) / f"recovery-{rows}.db"
            epoch = trio.run(create_schema, db)
            start = time.perf_counter()
            sending, queued, progress = fill(db, rows, args.per_session, f"epoch:{epoch}")
            filled = time.perf_counter() - start
            # fill() writes whole sessions: the rows written, when --rows is not a multiple.
            written, sessions = sending + queued + progress, max(1, rows // args.per_session)
            asked = (f" (--rows {rows} asked: whole sessions of {args.per_session})"
                     if written != rows else "")
            print(f"\n== {written} rows in {sessions} session{'s' * (sessions > 1)}{asked}: "
                  f"{sending} sending (dead epoch), {queued} queued, {progress} queued progress "
                  f"(generated in {filled:.1f} s)")
            if rows == args.rows[0]:
                for name, plan in plans(db):
                    print(f"   plan {name:17s} {plan}")
            f = trio.run(run, db, queued)
            print(f"   open (dead claims -> unknown, stale progress -> failed): {f['open']:7.2f} s"
                  f"  ({f['unknown']:.0f} unknown, {f['stale']:.0f} failed: "
                  f"{(f['unknown'] + f['stale']) / f['open']:,.0f} rows/s)")
            print(f"   rt.recover() (kick {f['kicked']:.0f} sessions):"
                  f"                 {f['recover']:7.2f} s")
            print(f"   re-dispatch of {queued} queued rows to the route:    "
                  f"{f['dispatch']:7.2f} s  ({queued / f['dispatch']:,.0f} rows/s delivered and "
                  f"recorded sent; last delivery at {f['delivered_at']:.2f} s)")
            start = time.perf_counter()
            report = read_database(db, status_report, limit=20)
            print(f"   tidings status (counts + 20 recent rows), read-only:   "
                  f"{time.perf_counter() - start:7.2f} s  {dict(report.counts)}")
            print(f"   peak RSS: {f['rss_open']:.0f} MB after the open-time recovery, "
                  f"{rss_mb():.0f} MB after re-dispatch (lanes hold up to a refill page each)")


if __name__ == "__main__":
    main()
