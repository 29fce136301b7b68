"""Wait for a condition the tests can only poll (a writer mailbox's depth, a lane's state).

``trio.testing.wait_all_tasks_blocked`` is no such wait when the task it waits for does real
I/O: a task waiting for a worker thread (a session read, a commit in the writer thread) or
for the writer process's answer counts as blocked too, so it returns before that task got
past the thread, and on a loaded machine the test went on too early. :func:`until` polls the
condition itself, giving the run loop (and the threads) a checkpoint between looks.
"""

from __future__ import annotations

from collections.abc import Callable

import trio

__all__ = ["until"]

POLL = 0.001
"""Seconds between looks: short against a SQLite job, long enough not to starve its thread."""


async def until(condition: Callable[[], object]) -> None:
    """Return once ``condition()`` is true (looked at now, then every :data:`POLL` seconds).

    No deadline of its own: wrap it in the test's hang guard (``trio.fail_after`` under a clock
    that moves: the real one, or ``autojump_clock``). Not for a test on ``mock_clock``, whose
    clock moves only at ``jump()``: these sleeps would never return (wait on an event there,
    guarded by ``tests/real_time.py``'s ``fail_after_real``)."""
    while not condition():  # noqa: ASYNC110 - a depth or a lane state has no event
        await trio.sleep(POLL)
