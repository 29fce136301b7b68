"""The long fault runs: seeded random faults over the whole runtime at several rates, and
systematic sweeps of one delivery path, with every invariant checked after each run.

Prints, per fault rate: runs, faults injected, restarts, escalations (restart intensity
exceeded, always as one clear RestartIntensityExceeded), deliveries and their final states,
channel turns and their terminal events, and invariant violations (with the first few, and the
seed and rate that replays each: ``run_chaos(db, ws, seed=S, rate=R)``). Then, per swept actor:
the steps of the path, the runs (one cancel per step) and their violations. Exits 1 if anything
was violated.

    .venv/bin/python bench/faults.py [--seeds 50] [--rates 0.001,0.002,0.005,0.01,0.02]
                                     [--sessions 8] [--no-sweep]
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import tempfile
import time

import trio
from _args import at_least, rate_list

from tidings.testing import run_chaos, sweep_delivery_path


async def chaos(directory: pathlib.Path, rates: list[float], seeds: int,
                sessions: int) -> int:
    bad = 0
    print(f"{'rate':>6} {'runs':>5} {'injected':>9} {'restarts':>9} {'escalations':>11} "
          f"{'sends':>6} {'turns':>6}  outcomes / turn ends / violations")
    for rate in rates:
        totals: collections.Counter[str] = collections.Counter()
        outcomes: collections.Counter[str] = collections.Counter()
        turns: collections.Counter[str] = collections.Counter()
        violations: list[str] = []
        began = time.perf_counter()
        for seed in range(seeds):
            workspace = directory / f"ws-{rate}-{seed}"
            workspace.mkdir()
            report = await run_chaos(directory / f"chaos-{rate}-{seed}.db", workspace,
                                     seed=seed, rate=rate, sessions=sessions, turns=4,
                                     messages=5, chats=sessions // 2, chat_messages=4)
            totals.update(runs=1, injected=report.injected, restarts=report.restarts,
                          escalations=report.escalations, sends=report.sends,
                          turns=sum(report.turns.values()), stranded=report.stranded)
            outcomes.update(report.outcomes)
            turns.update(report.turns)
            violations += [f"seed={seed} rate={rate}: {v}" for v in report.violations]
            if report.stranded:
                violations.append(f"seed={seed} rate={rate}: {report.stranded} handles "
                                  "never resolved while the runtime was up")
        bad += len(violations)
        print(f"{rate:>6} {totals['runs']:>5} {totals['injected']:>9} {totals['restarts']:>9} "
              f"{totals['escalations']:>11} {totals['sends']:>6} {totals['turns']:>6}  "
              + " ".join(f"{k}={v}" for k, v in sorted(outcomes.items())) + " / "
              + " ".join(f"{k}={v}" for k, v in sorted(turns.items()))
              + f" / violations={len(violations)}  ({time.perf_counter() - began:.0f} s)")
        for line in violations[:5]:
            print(f"         {line}")
    return bad


async def sweeps(directory: pathlib.Path) -> int:
    bad = 0
    print(f"{'actor':>10} {'steps':>6} {'runs':>5} {'injected':>9}  outcomes / violations")
    for target in ("route:*", "writer", "recovery"):
        where = directory / f"sweep-{target.strip(':*')}"
        where.mkdir()
        workspace = where / "ws"
        workspace.mkdir()
        runs = await sweep_delivery_path(where, workspace, target=target, messages=4)
        outcomes = collections.Counter(o for run in runs[1:] for o in run.outcomes)
        violations = [f"at step {run.at}: {v}" for run in runs for v in run.violations]
        bad += len(violations)
        print(f"{target:>10} {runs[0].steps:>6} {len(runs) - 1:>5} "
              f"{sum(bool(run.injected) for run in runs):>9}  "
              + " ".join(f"{k}={v}" for k, v in sorted(outcomes.items()))
              + f" / violations={len(violations)}")
        for line in violations[:5]:
            print(f"         {line}")
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=at_least(1), default=50)
    parser.add_argument("--rates", type=rate_list, default="0.001,0.002,0.005,0.01,0.02")
    parser.add_argument("--sessions", type=at_least(1), default=8)
    parser.add_argument("--no-sweep", action="store_true")
    args = parser.parse_args()
    rates = args.rates
    with tempfile.TemporaryDirectory() as tmp:
        directory = pathlib.Path(tmp)
        bad = trio.run(chaos, directory, rates, args.seeds, args.sessions)
        if not args.no_sweep:
            print()
            bad += trio.run(sweeps, directory)
    print(f"\ninvariant violations: {bad}")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
