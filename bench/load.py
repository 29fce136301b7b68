"""Load: 1,000 sessions with concurrent turns for a bounded time, with and without a stalled
client, and the p99 delivery latency of the other sessions in both runs (ratio printed).

Each session runs turns back to back for ``--seconds``: a turn opens, sends one message and
closes (leaving a turn never waits for its deliveries), then the session waits until that
message is delivered (``handle.wait()``) before the next turn. A delivery's latency is from
the ``send_text`` call to the route accepting it (trio's clock). Its route adds ``--latency``
seconds per delivery (a platform round trip). In the second run one session's route is
stalled for the whole run (a client that stopped reading): its session cannot advance, and
the others must not notice. Prints, for both runs: deliveries, deliveries/s, p50 / p99 / max
latency of the other sessions, and the p99 ratio (stalled / clean; ~1 means the stalled
client cost the others nothing). The stalled session's backlog is released at the end and
must drain in order.

    .venv/bin/python bench/load.py [--sessions 1000] [--seconds 10] [--latency 0.002]
                                    [--rounds 1]
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time

import trio
from _args import at_least, finite

import tidings
from tidings.testing import MemoryRoute


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run(path: pathlib.Path, sessions: int, seconds: float, latency: float,
              stalled: bool) -> dict[str, float]:
    latencies: list[float] = []
    delivered = victim_sent = 0
    async with tidings.open_runtime(path, workspace=path.parent, grace=1.0) as rt:
        ids = [await rt.create_session(channel="load") for _ in range(sessions)]
        routes = {session_id: MemoryRoute(latency=latency) for session_id in ids}
        for session_id, route in routes.items():
            rt.router.bind(session_id, route)
        victim = ids[0]
        if stalled:
            routes[victim].stall()

        async def session(session_id: str, deadline: float) -> None:
            nonlocal delivered, victim_sent
            n = 0
            while trio.current_time() < deadline:
                async with rt.open_turn(session_id) as ctx:
                    started = trio.current_time()
                    handle = await ctx.output.send_text(f"{session_id} message {n}")
                if session_id == victim and stalled:
                    victim_sent += 1
                    n += 1
                    if n >= 20:  # its backlog: the rest of the run it just waits
                        return
                    continue
                await handle.wait()
                latencies.append(routes[session_id].delivered_at[handle.delivery_id] - started)
                delivered += 1
                n += 1

        began = time.perf_counter()
        deadline = trio.current_time() + seconds
        async with trio.open_nursery() as nursery:
            for session_id in ids:
                nursery.start_soon(session, session_id, deadline)
        elapsed = time.perf_counter() - began
        backlog = len(routes[victim].attempted) if stalled else 0
        if stalled:  # the client comes back: its backlog drains, in order
            routes[victim].release()
            with trio.fail_after(60):
                await routes[victim].wait_delivered(victim_sent)
            seqs = [outbound.seq for outbound in routes[victim].delivered]
            assert seqs == sorted(seqs), "the stalled session's backlog went out of order"
    return {"deliveries": delivered, "rate": delivered / elapsed,
            "p50": percentile(latencies, 0.50), "p99": percentile(latencies, 0.99),
            "max": max(latencies, default=float("nan")), "stalled_attempted": backlog}


def show(name: str, result: dict[str, float]) -> None:
    print(f"{name:>8}: {int(result['deliveries']):>7} deliveries  {result['rate']:>8.0f}/s  "
          f"p50 {result['p50'] * 1000:7.2f} ms  p99 {result['p99'] * 1000:7.2f} ms  "
          f"max {result['max'] * 1000:7.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions",
                        type=at_least(2, "the stalled one and one other to measure"), default=1000)
    parser.add_argument("--seconds", type=finite(above=0), default=10.0)
    parser.add_argument("--latency", type=finite(least=0), default=0.002)
    parser.add_argument("--rounds", type=at_least(1), default=1,
                        help="clean/stalled pairs, interleaved; medians are printed")
    args = parser.parse_args()
    clean_runs, stalled_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for stalled, runs in ((False, clean_runs), (True, stalled_runs)):
                path = pathlib.Path(tmp) / f"load-{round_}-{stalled}.db"
                runs.append(trio.run(run, path, args.sessions, args.seconds, args.latency,
                                     stalled))
    print(f"load: {args.sessions} sessions, {args.seconds:g} s, route latency "
          f"{args.latency * 1000:g} ms, {args.rounds} round(s)")
    medians = {}
    for name, runs in (("clean", clean_runs), ("stalled", stalled_runs)):
        medians[name] = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        show(name, medians[name])
    ratio = medians["stalled"]["p99"] / medians["clean"]["p99"]
    print(f"p99 of the other sessions, stalled / clean: {ratio:.2f}")
    print(f"the stalled session queued {int(medians['stalled']['stalled_attempted'])} "
          "delivery attempt(s) while stalled (1 expected: the rest waited in the outbox) "
          "and drained in order after release")


if __name__ == "__main__":
    main()
