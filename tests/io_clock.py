"""The autojump clock of the tests that do real I/O: it does not jump while tidings' own SQLite
work is in flight.

A ``trio.testing.MockClock`` with an ``autojump_threshold`` jumps to the next deadline once
every task has been blocked for that many real seconds. A task waiting for a worker thread, or
for the writer process's answer, is blocked too: on a loaded machine a SQLite batch can outlast
the threshold, and the clock then jumped straight to a test's hang guard (``TooSlowError``) or
to a timeout of the code under test (a wrong branch), though nothing was stuck.

:func:`io_clock` gives a ``MockClock`` whose jump first looks for work in flight
(:func:`work_in_flight`): while there is some it holds the jump, and the run loop asks again
after another threshold of idle time. Work that stays in flight ``stuck_after`` real seconds
(a thread that never returns) no longer holds it, so a truly stuck test still meets its guard.
A loop that only waits on timers jumps as before.

``MockClock`` is final, so the clock cannot be a subclass, and trio has no public hook for
"may I jump now?": the run loop calls the clock's private ``_autojump()`` when the threshold
is reached, and :func:`io_clock` replaces that method on its own instance.
tests/test_io_clock.py pins this; if a trio release renames the hook, those tests fail.
"""

from __future__ import annotations

import math
import pathlib
import time
from types import FrameType
from typing import Any

import trio
import trio.testing

from tidings.store._batch import execute_batch
from tidings.store._writer import StoreWriter
from tidings.store._writer_process import Answers
from tidings.supervisor._testing_gate import WriterGate
from tidings.testing import live_tasks

__all__ = ["IO_AUTOJUMP_THRESHOLD", "STUCK_AFTER", "ClockGuard", "guard_of", "io_clock",
           "work_in_flight"]

IO_AUTOJUMP_THRESHOLD = 0.05
"""Real seconds the run loop must sit idle before the clock may jump.

With trio's default of 0 for ``autojump_clock``, time jumps whenever every task is blocked, and
with no timer pending the loop spins at full speed polling for a thread, taking the CPU (and
the GIL) from it. Work in flight no longer depends on this being long enough (see
:class:`ClockGuard`); it only spares the loop from asking too often."""

STUCK_AFTER = 5.0
"""Real seconds after which work in flight no longer holds the clock: a batch, even on a
loaded machine, takes far less; a thread that never returns must still trip the guard."""

_RUN_SYNC = trio.to_thread.run_sync.__code__
_NEXT_FRAME = Answers._next_frame.__code__
_WAIT_READY = Answers.wait_ready.__code__


class ClockGuard:
    """Decides, each time the run loop would autojump, whether the clock may.

    ``asked``: how often the run loop asked; ``held``: jumps held back because work was in
    flight; ``forced``: jumps made although work was in flight, because some of it had been so
    for ``stuck_after`` seconds.
    """

    def __init__(self, clock: trio.testing.MockClock, stuck_after: float) -> None:
        self._jump = clock._autojump  # trio's own: jump to the next deadline, if any
        self.stuck_after = stuck_after
        self.asked = 0
        self.held = 0
        self.forced = 0
        self._since: dict[int, tuple[object, float]] = {}  # id -> (work, first seen in flight)

    def autojump(self) -> None:
        """Called by trio's run loop (as ``MockClock._autojump``) after a threshold of idle."""
        self.asked += 1
        if not 0 < trio.lowlevel.current_statistics().seconds_to_next_deadline < math.inf:
            return  # nowhere to jump: spare the look at every task
        now = time.perf_counter()
        since: dict[int, tuple[object, float]] = {}
        for work in work_in_flight():
            _, first = self._since.get(id(work), (work, now))
            since[id(work)] = (work, first)
        self._since = since
        if since:
            if now - min(first for _, first in since.values()) < self.stuck_after:
                self.held += 1
                return
            self.forced += 1
        self._jump()


def io_clock(*, threshold: float = IO_AUTOJUMP_THRESHOLD,
             stuck_after: float = STUCK_AFTER) -> trio.testing.MockClock:
    """A ``MockClock`` that autojumps after *threshold* real seconds of idle, except while
    tidings' SQLite work is in flight (for at most *stuck_after* real seconds)."""
    clock = trio.testing.MockClock(autojump_threshold=threshold)
    clock._autojump = ClockGuard(clock, stuck_after).autojump  # type: ignore[method-assign]
    return clock


def guard_of(clock: trio.testing.MockClock) -> ClockGuard:
    """The :class:`ClockGuard` of a clock made by :func:`io_clock`."""
    guard = getattr(clock._autojump, "__self__", None)
    if not isinstance(guard, ClockGuard):
        raise TypeError(f"{clock!r} was not made by io_clock()")
    return guard


def work_in_flight() -> list[object]:
    """One object per piece of tidings' SQLite work in flight now, from the await frames of
    every task of this run (stable while that piece lasts):

    * a worker-thread call made by a ``tidings`` module that cannot be abandoned (the writer's
      batches, the read pool's reads, the store's and runtime's opening): it is bounded work
      that will return. Abandonable calls wait for the outside (a terminal's input, a command
      agent's exit, a test's gate) and do not hold the clock, nor do the tests' own threads,
      nor a writer batch held in a closed :func:`tidings.testing.writer_gate` (the test holds
      it on purpose, and may wait on a timer meanwhile).
    * the writer process's answer to a batch it holds (``Answers.pending``), or its start-up
      (``wait_ready``), unless that process is stopped (``SIGSTOP``): it then does no work.
    """
    found: list[object] = []
    for task in live_tasks():
        frames = [frame for frame, _ in task.iter_await_frames()]
        for caller, frame in zip([None, *frames], frames, strict=False):
            code = frame.f_code
            if code is _RUN_SYNC:
                local = frame.f_locals
                if (caller is not None and _is_tidings(caller)
                        and not local.get("abandon_on_cancel") and not _gated(local)):
                    found.append(local.get("placeholder", frame))
            elif code is _WAIT_READY or code is _NEXT_FRAME:
                answers = frame.f_locals["self"]
                waiting_for = answers if code is _WAIT_READY else (
                    answers.pending[0] if answers.pending else None)
                if waiting_for is not None and not _stopped(_writer_pid(frames)):
                    found.append(waiting_for)
    return found


def _is_tidings(frame: FrameType) -> bool:
    name = frame.f_globals.get("__name__", "")
    return name == "tidings" or name.startswith("tidings.")


def _gated(run_sync_locals: dict[str, Any]) -> bool:
    """Whether this thread call is a writer batch held in a closed ``writer_gate``."""
    if run_sync_locals.get("sync_fn") is not execute_batch:
        return False
    _, batches = run_sync_locals["args"]
    return any(isinstance(gate := getattr(getattr(op, "fn", None), "__self__", None), WriterGate)
               and not gate.released for ops in batches for op in ops)


def _writer_pid(frames: list[FrameType]) -> int | None:
    """The writer process's pid, from the writer's frame in the same await chain."""
    for frame in frames:
        owner = frame.f_locals.get("self")
        if isinstance(owner, StoreWriter):
            return owner.process_id
    return None


def _stopped(pid: int | None) -> bool:
    """Whether process *pid* is stopped (Linux ``/proc``; elsewhere, never)."""
    if pid is None:
        return False
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] in (["T"], ["t"])
