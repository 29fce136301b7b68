"""Kill -9 the runtime at many random moments and check the crash-safety promises each time.

Runs the harness of ``tests/recovery/crash_harness.py`` (a child process sends a stream of
deliveries through a route that fsyncs what it "sent", bound to every session but the first,
whose rows go ``unrouted``, so ``--sessions`` is at least 2; SIGKILL after a seeded number of
acknowledged sends; in-process restart and recovery; the checks listed there) for ``--kills``
seeds and prints what each kill point found, then totals. Exits 1 at the first broken promise.

    .venv/bin/python bench/crash_harness.py [--kills 100] [--seed 1000] [--sessions 6]
                                             [--max-kill-after 400]
"""

from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys
import tempfile
import time

import attrs
import trio
from _args import at_least

ROOT = pathlib.Path(__file__).resolve().parent.parent
_SPEC = importlib.util.spec_from_file_location(
    "tidings_crash_harness", ROOT / "tests" / "recovery" / "crash_harness.py")
assert _SPEC is not None
assert _SPEC.loader is not None
harness = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(harness)


async def main(kills: int, first_seed: int, sessions: int, max_kill_after: int) -> int:
    totals: dict[str, int] = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="tidings-crash-") as tmp:
        for n, seed in enumerate(range(first_seed, first_seed + kills), start=1):
            try:
                result = await harness.run_kill_point(pathlib.Path(tmp) / str(seed), seed,
                                                      sessions=sessions,
                                                      max_kill_after=max_kill_after)
            except harness.CrashFinding as finding:
                print(f"BROKEN at kill point {n}: {finding}")
                return 1
            for key, value in attrs.asdict(result).items():
                if key in ("seed", "kill_after"):
                    continue
                totals[key] = totals.get(key, 0) + value
            print(f"kill {n:4d} seed {seed} after {result.kill_after:4d} sends: "
                  f"rows {result.rows:4d}, platform got {result.recorded_by_platform:4d}, "
                  f"sending at kill {result.sending_at_kill}, unknown {result.unknown}, "
                  f"queued at kill {result.queued_at_kill:4d} -> redelivered "
                  f"{result.redelivered:4d}, stale progress {result.stale_progress}")
    elapsed = time.perf_counter() - started
    print(f"\n{kills} kill points in {elapsed:.1f} s, no broken promise. Totals: "
          + ", ".join(f"{k} {v}" for k, v in totals.items()))
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=at_least(1), default=100)
    parser.add_argument("--seed", type=int, default=1000, help="the first seed")
    parser.add_argument("--sessions", default=6, type=at_least(
        2, "the first has no route, its rows go unrouted: one more to deliver to"))
    parser.add_argument("--max-kill-after", type=at_least(1), default=400,
                        help="kill after 1..N acknowledged sends (seeded)")
    args = parser.parse_args()
    sys.exit(trio.run(main, args.kills, args.seed, args.sessions, args.max_kill_after))
