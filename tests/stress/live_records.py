"""How many objects of some kinds are alive: the no-growth tests' measure.

A long-running runtime that keeps something per message, turn or session it served grows
without end; counting the live records of the kinds a cycle makes, after a few cycles and
after many, shows whether anything is kept.
"""

from __future__ import annotations

import collections
import gc

__all__ = ["SLACK", "grown", "live_records"]


def live_records(kinds: tuple[type, ...]) -> collections.Counter[str]:
    """How many objects of exactly each of ``kinds`` are alive, by type name, garbage
    collected first (so only what something still holds is counted)."""
    gc.collect()
    counts = collections.Counter[str]()
    for obj in gc.get_objects():
        if type(obj) in kinds:
            counts[type(obj).__name__] += 1
    return counts


SLACK = 2
"""Live records a kind may differ by between two counts without growing: a scope or lock some
task holds for a moment as the count is taken (a background write, a timer), or one an
earlier test in the process lets go meanwhile. Something kept per cycle adds one per cycle,
and the tests count across more cycles than this."""


def grown(before: collections.Counter[str], after: collections.Counter[str]
          ) -> dict[str, tuple[int, int]]:
    """The kinds whose live records rose by more than :data:`SLACK` from *before* to
    *after*: ``{kind: (before, after)}`` (empty: nothing grew)."""
    return {kind: (before[kind], after[kind]) for kind in after
            if after[kind] > before[kind] + SLACK}
