"""How many objects of some kinds are alive: the no-growth tests' measure.

A long-running runtime that keeps something per message, turn or session it served grows
without end; counting the live records of the kinds a cycle makes, after a few cycles and
after many, shows whether anything is kept.
"""

from __future__ import annotations

import collections
import gc

__all__ = ["live_records"]


def live_records(kinds: tuple[type, ...]) -> collections.Counter[str]:
    """How many objects of exactly each of ``kinds`` are alive, by type name, garbage
    collected first (so only what something still holds is counted)."""
    gc.collect()
    counts = collections.Counter[str]()
    for obj in gc.get_objects():
        if type(obj) in kinds:
            counts[type(obj).__name__] += 1
    return counts
