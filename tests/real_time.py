"""A hang guard in real seconds, for the tests that run on pytest-trio's ``mock_clock``.

``trio.fail_after(N)`` counts trio's clock. Under ``mock_clock`` (a ``MockClock`` that moves
only when the test calls ``jump``) that clock stands still while the test waits, so such a
"hang guard" never fires: a wait that never ended (see a8e1b12, c85cf09) hung the run until
tests/conftest.py's watchdog ended the whole run ``HANG_LIMIT`` later, where it should have
failed that one test at once. :func:`fail_after_real` counts real seconds, in a timer thread,
whatever trio's clock does.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import trio

__all__ = ["fail_after_real"]


@contextlib.contextmanager
def fail_after_real(seconds: float) -> Iterator[None]:
    """Cancel the block after ``seconds`` real seconds and raise ``trio.TooSlowError``.

    A ``threading.Timer`` cancels a ``CancelScope`` around the block through the run's
    ``TrioToken``. On the way out the timer is cancelled and joined before the scope closes,
    so no thread outlives the block, and a cancel the timer queued as the block ended is
    dropped: it never reaches code after the block."""
    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    token = trio.lowlevel.current_trio_token()
    ended = False
    with trio.CancelScope() as scope:

        def expire() -> None:  # runs in trio's thread, like the block's own code
            if not ended:
                scope.cancel()

        timer = threading.Timer(seconds, token.run_sync_soon, args=(expire,))
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            ended = True
            timer.cancel()
            timer.join()  # at once: cancelled, or done queueing expire()
    if scope.cancelled_caught:
        raise trio.TooSlowError(f"still running after {seconds} real seconds")
