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
from collections.abc import Iterator

import trio

from tidings.store._real_time import move_on_after_real

__all__ = ["fail_after_real"]


@contextlib.contextmanager
def fail_after_real(seconds: float) -> Iterator[None]:
    """Cancel the block after ``seconds`` real seconds and raise ``trio.TooSlowError``.

    The store's :func:`~tidings.store._real_time.move_on_after_real` counts them (a timer
    thread cancels a scope around the block through the run's token); on the way out the
    thread is stopped and joined before the scope closes, so no thread outlives the block,
    and a cancel it queued as the block ended reaches a closed scope: never code after it."""
    if not seconds > 0:
        raise ValueError(f"seconds must be > 0, got {seconds!r}")
    with move_on_after_real(seconds) as scope:
        yield
    if scope.cancelled_caught:
        raise trio.TooSlowError(f"still running after {seconds} real seconds")
