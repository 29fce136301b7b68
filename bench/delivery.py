"""End-to-end delivery throughput against plain sqlite3 baselines measured in the same run.

A delivery is ``send_text`` (persist) until ``sent`` is recorded, through an in-memory route.
Each run is timed once every sender has had one delivery ``sent`` (the start-up burst of all
senders at once into an idle runtime is not the steady state; its latency is printed apart).
Prints, each the median of three interleaved rounds:
  - tidings deliveries/s, with each writer (``open_runtime(writer="thread")``, the default, and
    ``writer="process"``), with 1 and 100 concurrent senders (one session each; a sender sends one
    message and waits until it is recorded sent before the next, so 100 deliveries are in
    flight), and the p50/p99 latency of ``send_text`` (until the intent is durable); also a
    saturation run where 100 senders send back to back without waiting (its latency is
    queueing: Little's law makes it about senders / throughput); and "served": 100 senders
    with serve's default writer (the process writer) and the garbage collector set as
    ``tidings serve`` sets it (``gc.freeze()``, a larger first generation:
    ``tidings.supervisor._collector``);
  - (a) the per-delivery-commit baseline: plain sqlite3, WAL, synchronous=FULL, one transaction
    for message + outbox + work item, one for ``sending``, one for ``sent``;
  - (c) the raw batched lifecycle: the same three writes for 64 deliveries per transaction.
Both baselines also append the runtime events the runtime writes (queued, sending, sent), so all
three variants make the same durable writes. Targets at 100 senders: >= 5x (a), >= 50% of (c),
send_text p99 <= 10 ms. Also prints the throughput with 20,000 routes bound vs 100, and the
cost of a history append in a session of 100,000 rows vs an empty one, and of reading a 50-row
page of its history (``rt.history(limit=50, before=...)``) there vs in a session of 400 rows
(all should be ~1).

    .venv/bin/python bench/delivery.py [--deliveries N] [--rounds R]
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import pathlib
import statistics
import tempfile
import time

import trio
from _args import at_least

import tidings
from tidings.store import EXECUTORS, Call
from tidings.store._connect import connect_writer
from tidings.store._schema import migrate
from tidings.supervisor._collector import tune_for_serving
from tidings.supervisor._config import ServeConfig

TEXT = "The nightly build finished: 412 tests passed, 0 failed; artifacts are uploaded."


def _new_id() -> str:
    """A random 32-hex id, as cheap as the runtime's own ids (``uuid4().hex`` would make the
    harness, not the store, a large part of every variant's time)."""
    return os.urandom(16).hex()


class AcceptingRoute:
    """The in-memory route of the runs: accepts every outbound after one checkpoint (a real
    route yields for its I/O) and keeps nothing. ``tidings.testing.MemoryRoute`` records every
    outbound for assertions, which over a long run makes the harness's own memory (and the
    collector's full passes over it) part of what is measured."""

    async def deliver(self, outbound: object) -> None:
        await trio.lowlevel.checkpoint()


async def runtime_run(path: pathlib.Path, deliveries: int, senders: int,
                      extra_bound: int = 0, *, pipelined: bool = False, writer: str = "thread",
                      cold: list[float] | None = None) -> tuple[float, list[float]]:
    """Return (deliveries/s, send_text latencies in seconds).

    Each sender sends one message and waits until it is recorded ``sent`` before the next, so
    ``senders`` deliveries are in flight; ``pipelined=True`` sends back to back instead and
    waits for all at the end (a saturation test: latency then measures the queue). *writer* is
    ``open_runtime(writer=...)``: ``"thread"`` or ``"process"``.

    Timed from the moment every sender has had one delivery of its own ``sent``: that first
    one (all senders at once into an idle runtime, each lane starting) is a start-up burst,
    not the steady state the figures are about. In a 3,000-delivery run at 100 senders it was
    3.3% of the sends, with a p50 of 9-17 ms, so it alone set the p99. The ``send_text``
    latencies of those first sends are appended to *cold*, if given.
    """
    latencies: list[float] = []
    async with tidings.open_runtime(path, workspace=path.parent,
                                    writer=writer) as rt:  # type: ignore[arg-type]
        sessions = [await rt.create_session(channel="bench") for _ in range(senders)]
        for session_id in sessions:
            rt.router.bind(session_id, AcceptingRoute())
        for i in range(extra_bound):
            rt.router.bind(f"idle_{i}", AcceptingRoute())
        per_sender = deliveries // senders
        warming = senders
        warm = trio.Event()
        start = 0.0

        async def sender(session_id: str) -> None:
            nonlocal warming, start
            handles = []
            async with rt.open_turn(session_id) as ctx:
                began = time.perf_counter()
                handle = await ctx.output.send_text(TEXT)
                if cold is not None:
                    cold.append(time.perf_counter() - began)
                assert await handle.wait() == "delivered"
                warming -= 1
                if not warming:  # the last one: the clock starts as they all go on
                    start = time.perf_counter()
                    warm.set()
                await warm.wait()
                for _ in range(per_sender):
                    began = time.perf_counter()
                    handle = await ctx.output.send_text(TEXT)
                    latencies.append(time.perf_counter() - began)
                    if pipelined:
                        handles.append(handle)
                    else:
                        assert await handle.wait() == "delivered"
            for handle in handles:
                assert await handle.wait() == "delivered"

        async with trio.open_nursery() as nursery:
            for session_id in sessions:
                nursery.start_soon(sender, session_id)
        elapsed = time.perf_counter() - start
    return per_sender * senders / elapsed, latencies


def _plain(path: pathlib.Path):
    conn = connect_writer(path, "FULL")
    migrate(conn)
    conn.execute("INSERT INTO sessions (session_id, core_id, created_at, updated_at) "
                 "VALUES ('s', 'bench', 0, 0)")
    return conn


def _enqueue_rows(i: int, now: float) -> tuple[tuple, tuple, tuple, tuple]:
    delivery_id, work_id, message_id = (_new_id() for _ in range(3))
    blocks = json.dumps([{"type": "text", "text": TEXT}])
    outbox = (delivery_id, "s", i, work_id, "message", "bench", TEXT, blocks, "{}", 1,
              message_id, "queued", now, now)
    work = (work_id, "delivery.send", delivery_id, "pending", now, now)
    message = (message_id, "s", delivery_id, "assistant", "text", TEXT, "persist", 1, 1, now,
               now)
    event = ("delivery.queued", "s", delivery_id, json.dumps({"seq": i}), now)
    return outbox, work, message, event


_OUTBOX = ("INSERT INTO outbox (delivery_id, session_id, seq, work_id, kind, channel, text, "
           "blocks, metadata, visible, history_message_id, status, created_at, updated_at) "
           "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)")
_WORK = ("INSERT INTO work_items (work_id, kind, subject_id, status, created_at, updated_at) "
         "VALUES (?,?,?,?,?,?)")
_MESSAGE = ("INSERT INTO messages (message_id, session_id, delivery_id, role, kind, text, "
            "policy, visible, model_visible, created_at, updated_at) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?)")
_EVENT = "INSERT INTO events (type, session_id, delivery_id, data, created_at) VALUES (?,?,?,?,?)"
_CLAIM = ("UPDATE outbox SET status = 'sending', claimant = 'epoch:1', attempts = attempts + 1, "
          "updated_at = ? WHERE delivery_id = ? AND status = 'queued'")
_CLAIM_WORK = ("UPDATE work_items SET status = 'claimed', claimant = 'epoch:1', "
               "attempts = attempts + 1, updated_at = ? WHERE work_id = ?")
_SENT = ("UPDATE outbox SET status = 'sent', updated_at = ? WHERE delivery_id = ? "
         "AND status = 'sending'")
_SENT_WORK = "UPDATE work_items SET status = 'completed', updated_at = ? WHERE work_id = ?"


def per_delivery_commit(path: pathlib.Path, deliveries: int) -> float:
    conn = _plain(path)
    start = time.perf_counter()
    for i in range(deliveries):
        now = time.time()
        outbox, work, message, event = _enqueue_rows(i, now)
        delivery_id, work_id = outbox[0], work[0]
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(_OUTBOX, outbox)
        conn.execute(_WORK, work)
        conn.execute(_MESSAGE, message)
        conn.execute(_EVENT, event)
        conn.execute("COMMIT")
        for update, work_update, kind in ((_CLAIM, _CLAIM_WORK, "delivery.sending"),
                                          (_SENT, _SENT_WORK, "delivery.sent")):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(update, (time.time(), delivery_id))
            conn.execute(work_update, (time.time(), work_id))
            conn.execute(_EVENT, (kind, "s", delivery_id, "{}", time.time()))
            conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return deliveries / elapsed


def raw_batched(path: pathlib.Path, deliveries: int, per_tx: int = 64) -> float:
    conn = _plain(path)
    start = time.perf_counter()
    for base in range(0, deliveries, per_tx):
        now = time.time()
        batch = [_enqueue_rows(i, now) for i in range(base, min(deliveries, base + per_tx))]
        ids = [(rows[0][0], rows[1][0]) for rows in batch]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(_OUTBOX, [rows[0] for rows in batch])
        conn.executemany(_WORK, [rows[1] for rows in batch])
        conn.executemany(_MESSAGE, [rows[2] for rows in batch])
        conn.executemany(_EVENT, [rows[3] for rows in batch])
        conn.execute("COMMIT")
        for update, work_update, kind in ((_CLAIM, _CLAIM_WORK, "delivery.sending"),
                                          (_SENT, _SENT_WORK, "delivery.sent")):
            now = time.time()
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany(update, [(now, d) for d, _ in ids])
            conn.executemany(work_update, [(now, w) for _, w in ids])
            conn.executemany(_EVENT, [(kind, "s", d, "{}", now) for d, _ in ids])
            conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return deliveries / elapsed


async def history_append(path: pathlib.Path, prefill: int, sends: int = 400,
                         pages: int = 400) -> tuple[float, float]:
    """Seconds per persisted send into a session that already has *prefill* history rows, and
    per read of a 50-row page of its model context (``rt.history(limit=50, before=...)``,
    from the middle of what the sends wrote) after them."""
    async with tidings.open_runtime(path, workspace=path.parent) as rt:
        session_id = await rt.create_session(channel="bench")
        rt.router.bind(session_id, AcceptingRoute())
        if prefill:
            await rt.store.commit([Call(functools.partial(_prefill, session_id, prefill))])
        async with rt.open_turn(session_id) as ctx:
            start = time.perf_counter()
            for _ in range(sends):
                await ctx.output.send_text(TEXT)
            append = (time.perf_counter() - start) / sends
        middle = (await rt.history(session_id, limit=sends // 2))[0].message_id
        start = time.perf_counter()
        for _ in range(pages):
            await rt.history(session_id, True, limit=50, before=middle)
        return append, (time.perf_counter() - start) / pages


def _prefill(session_id: str, rows: int, conn) -> None:
    now = time.time()
    conn.executemany(
        "INSERT INTO messages (message_id, session_id, role, kind, text, policy, visible, "
        "model_visible, created_at, updated_at) VALUES (?, ?, 'assistant', 'text', ?, "
        "'persist', 1, 1, ?, ?)",
        ((f"old_{i}", session_id, TEXT, now, now) for i in range(rows)))


WRITERS = EXECUTORS
SERVED = "served, 100 senders"
"""The variant run as ``tidings serve`` runs: its default writer (``SERVED_WRITER``), the
collector tuned first."""

SERVED_WRITER = ServeConfig().writer
"""``tidings serve``'s default writer: ``"process"``."""


def _variant(writer: str, senders: int, pipelined: bool) -> str:
    return f"{writer}, {senders} sender{'s' * (senders > 1)}{' pipelined' * pipelined}"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries",
                        type=at_least(100, "one per sender at 100 senders"), default=3000)
    parser.add_argument("--rounds", type=at_least(1), default=3)
    args = parser.parse_args()
    n = args.deliveries
    results: dict[str, list[float]] = {}
    lat: dict[str, list[float]] = {}
    cold: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = pathlib.Path(tmp)
        for r in range(args.rounds):
            results.setdefault("a", []).append(per_delivery_commit(base / f"a{r}.db", n // 5))
            for writer in WRITERS:
                for senders, count, pipelined in ((1, n // 5, False), (100, n, False),
                                                  (100, n, True)):
                    name = _variant(writer, senders, pipelined)
                    rate, latencies = trio.run(functools.partial(
                        runtime_run, base / f"{name}-{r}.db".replace(" ", "_"), count,
                        senders, pipelined=pipelined, writer=writer))
                    results.setdefault(name, []).append(rate)
                    lat.setdefault(name, []).extend(latencies)
            # As `tidings serve` runs: its default writer, the collector set as it sets it.
            before = tune_for_serving()
            try:
                rate, latencies = trio.run(functools.partial(
                    runtime_run, base / f"served-{r}.db", n, 100, writer=SERVED_WRITER,
                    cold=cold))
            finally:
                gc.unfreeze()
                gc.set_threshold(*before)
            results.setdefault(SERVED, []).append(rate)
            lat.setdefault(SERVED, []).extend(latencies)
            results.setdefault("c", []).append(raw_batched(base / f"c{r}.db", n))
            # Long enough that the host's noise (+-10% over a 3,000-delivery run) does not
            # pass for a cost of the routing table.
            bound_n = max(n, 10_000)
            small, _ = trio.run(runtime_run, base / f"b100-{r}.db", bound_n, 100, 0)
            large, _ = trio.run(runtime_run, base / f"b20k-{r}.db", bound_n, 100, 19_900)
            results.setdefault("bound_ratio", []).append(large / small)
            short, short_page = trio.run(history_append, base / f"h0-{r}.db", 0)
            long, long_page = trio.run(history_append, base / f"h100k-{r}.db", 100_000)
            results.setdefault("history_ratio", []).append(long / short)
            results.setdefault("page_ratio", []).append(long_page / short_page)
    med = {key: statistics.median(values) for key, values in results.items()}
    a, c = med["a"], med["c"]
    print(f"(a) per-delivery commits, plain sqlite3     {a:8.0f} deliveries/s")
    print(f"(c) raw batched lifecycle, 64 per tx         {c:8.0f} deliveries/s")
    names = [_variant(writer, senders, pipelined) for writer in WRITERS
             for senders, pipelined in ((1, False), (100, False), (100, True))]
    for name in [*names, SERVED]:
        t = med[name]
        p50, p99 = _pct(lat[name], 0.5) * 1000, _pct(lat[name], 0.99) * 1000
        print(f"tidings, {name:>30}  {t:8.0f} deliveries/s  vs a = {t / a:4.1f}x  "
              f"vs c = {t / c:4.2f}  send_text p50 {p50:5.1f} ms  p99 {p99:5.1f} ms")
    print(f"served, the untimed first send of each sender (100 at once, lanes starting): "
          f"send_text p50 {_pct(cold, 0.5) * 1000:5.1f} ms, max {max(cold) * 1000:5.1f} ms")
    for writer, name in [*((w, _variant(w, 100, False)) for w in WRITERS),
                         (f"{SERVED_WRITER}, as served", SERVED)]:
        t100, p99 = med[name], _pct(lat[name], 0.99) * 1000
        verdict = "met" if t100 >= 5 * a and t100 >= 0.5 * c and p99 <= 10 else "NOT met"
        print(f"target at 100 senders, writer={writer} "
              f"(>= 5x a, >= 0.5 c, p99 <= 10 ms): {verdict}")
    print(f"deliveries/s with 20,000 routes bound / with 100 bound: {med['bound_ratio']:.2f}")
    print(f"send_text time in a session with 100,000 history rows / with none: "
          f"{med['history_ratio']:.2f}")
    print(f"rt.history page of 50 in a session with 100,400 history rows / with 400: "
          f"{med['page_ratio']:.2f}")


if __name__ == "__main__":
    main()
