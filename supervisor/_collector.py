"""The garbage collector's settings for a process that serves for a long time (``tidings serve``).

Two settings, both usual for long-lived CPython servers, and both process-wide, so only the
server's own entry point applies them (an embedding host keeps its own):

- ``gc.freeze()`` once start-up has loaded everything: the modules, classes and functions that
  importing and configuring made (nearly all of the heap then) leave the collector's
  generations, so a full collection walks only what serving allocates. Measured with
  ``bench/delivery.py`` at 100 senders: ``send_text`` p99 about halved.
- a first-generation threshold of :data:`GEN0_THRESHOLD` allocations instead of CPython's 700.
  Each delivery allocates some dozens of container objects, nearly all freed by reference
  counting as it ends, so at 700 a young collection ran every few deliveries and found
  almost nothing to free: about 8% of the event loop's CPU per delivery at 100 senders
  (measured as the loop's CPU time per delivery, 10,000 against 700). The older generations
  keep their thresholds, so cycles are still collected, later and in larger steps.
"""

from __future__ import annotations

import gc

__all__ = ["GEN0_THRESHOLD", "tune_for_serving"]

GEN0_THRESHOLD = 10_000
"""Allocations (less deallocations) of container objects between two young collections."""


def tune_for_serving() -> tuple[int, int, int]:
    """Freeze the heap start-up made and raise the first generation's threshold to
    :data:`GEN0_THRESHOLD`; returns the thresholds before, for a caller that puts them back
    (``gc.set_threshold(*before)``: a test, a benchmark that runs other variants after)."""
    before = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(GEN0_THRESHOLD, *before[1:])
    return before
