"""The real-time hang guard (tests/real_time.py): it fires on a clock that never moves, lets a
quick block be, and leaves no thread behind.

If :func:`fail_after_real` could not fire, the first test would hang: tests/conftest.py's
watchdog then ends the run with every thread's traceback."""

from __future__ import annotations

import threading
import time

import pytest
import trio
import trio.testing

from .real_time import fail_after_real


def _new_threads(before: set[threading.Thread]) -> set[threading.Thread]:
    return set(threading.enumerate()) - before


async def test_a_block_that_waits_for_ever_on_a_clock_that_never_moves_is_too_slow(
        mock_clock: trio.testing.MockClock) -> None:
    before = set(threading.enumerate())
    started = time.monotonic()
    with pytest.raises(trio.TooSlowError), fail_after_real(0.2):
        await trio.sleep_forever()
    assert time.monotonic() - started >= 0.2
    assert mock_clock.current_time() == 0  # trio's clock never moved: the guard did not use it
    assert _new_threads(before) == set()


async def test_a_quick_block_is_let_be_and_its_timer_is_gone(
        mock_clock: trio.testing.MockClock) -> None:
    before = set(threading.enumerate())
    with fail_after_real(0.1):
        assert len(_new_threads(before)) == 1  # the timer runs while the block does
        await trio.lowlevel.checkpoint()
    assert _new_threads(before) == set()  # nothing left that could fire after the block


async def test_an_error_in_the_block_is_raised_as_it_is_and_its_timer_is_gone(
        mock_clock: trio.testing.MockClock) -> None:
    before = set(threading.enumerate())
    with pytest.raises(KeyError), fail_after_real(30):
        raise KeyError("the block's own")
    assert _new_threads(before) == set()


async def test_a_cancel_from_outside_is_no_too_slow_error(
        mock_clock: trio.testing.MockClock) -> None:
    with trio.CancelScope() as outer, fail_after_real(30):
        outer.cancel()
        await trio.sleep_forever()
    assert outer.cancelled_caught


@pytest.mark.parametrize("seconds", [0, -1.0])
async def test_a_bound_that_is_not_positive_is_refused(seconds: float) -> None:
    with pytest.raises(ValueError, match="seconds"), fail_after_real(seconds):
        pass
