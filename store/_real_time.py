"""Deadlines in real seconds, whatever clock the trio run keeps.

A few of the store's waits bound something outside the run: a writer child that may never
answer, a pipe a process the child started may hold for ever. Those bounds are real time. On
trio's clock they were not: under a user's autojump ``MockClock`` such a deadline passed the
moment the run loop was idle (every task waiting on the child), cutting short a wait the
child would have ended milliseconds later. :class:`RealTimer` counts the seconds in a timer
thread and cancels a scope through the run's token; :func:`move_on_after_real` is
``trio.move_on_after`` on it.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import trio

__all__ = ["RealTimer", "move_on_after_real"]


class RealTimer:
    """Cancel *scope* after *seconds* real seconds (from now; sync: call it in trio's thread).

    A ``threading.Timer`` counts them and cancels the scope in trio's thread. If no thread can
    start (the process is at its thread limit), the scope's deadline on trio's clock bounds it
    instead: never a wait that raises for it, or waits for ever. :meth:`close` (sync, prompt)
    stops and joins the thread: call it as the scope's block ends, so no thread outlives it."""

    def __init__(self, scope: trio.CancelScope, seconds: float) -> None:
        self._thread: threading.Timer | None = None
        token = trio.lowlevel.current_trio_token()
        thread = threading.Timer(seconds, _cancel_soon, args=(token, scope))
        thread.daemon = True
        try:
            thread.start()
        except RuntimeError:  # no thread to spare: trio's clock, still bounded
            scope.deadline = min(scope.deadline, trio.current_time() + seconds)
            return
        self._thread = thread

    def close(self) -> None:
        """Stop the count; at once (the thread is cancelled, or done queueing the cancel)."""
        if self._thread is not None:
            self._thread.cancel()
            self._thread.join()
            self._thread = None


@contextlib.contextmanager
def move_on_after_real(seconds: float, *, shield: bool = False
                       ) -> Iterator[trio.CancelScope]:
    """``trio.move_on_after(seconds, shield=shield)``, the seconds real ones (see
    :class:`RealTimer`): the block is cancelled after them, and the scope's
    ``cancelled_caught`` says so."""
    with trio.CancelScope(shield=shield) as scope:
        timer = RealTimer(scope, seconds)
        try:
            yield scope
        finally:
            timer.close()


def _cancel_soon(token: trio.lowlevel.TrioToken, scope: trio.CancelScope) -> None:
    """In the timer's thread: cancel *scope* in trio's (a scope whose block has ended
    ignores it)."""
    try:
        token.run_sync_soon(scope.cancel)
    except trio.RunFinishedError:  # the run ended without closing the timer: nothing to cancel
        pass
