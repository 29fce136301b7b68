"""The writer's wait for its child's last answers is real seconds, whatever trio's clock does.

When the process writer is cancelled (its runtime's scope, from outside), batches the child
already has may still commit: the host waits up to ``ANSWER_GRACE`` (10 s) for their answers,
so each request learns what became of it. That grace was a deadline on trio's clock, so under
a user's autojump ``MockClock`` it passed the moment the loop was idle, while the child was
still committing: a write the child committed milliseconds later was answered "may or may not
have committed", and a stop by a test that cancels its runtime read as a lost answer.
"""

from __future__ import annotations

import sys

import pytest
import trio
import trio.testing

from tidings.store import Execute, open_store

from ..real_time import fail_after_real
from .test_writer_stderr import _hooked

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the writer child's pipes")

# The child takes a quarter of a real second over each batch after the first (the table).
_SLOW = """\
    import time
    child.batches = getattr(child, "batches", 0) + 1
    if child.batches > 1:
        time.sleep(0.25)
"""


@pytest.fixture
def user_autojump_clock() -> trio.testing.MockClock:
    """A user's autojump clock: it jumps the moment the run loop is idle."""
    return trio.testing.MockClock(autojump_threshold=0)


async def test_a_cancelled_writer_waits_real_seconds_for_the_childs_answer(
        tmp_path, monkeypatch, user_autojump_clock) -> None:
    _hooked(tmp_path, monkeypatch, "execute_batch", _SLOW)
    heard: list[tuple[str, object]] = []
    # The outer scope is the user's around their runtime, cancelled from outside.
    with fail_after_real(30), trio.CancelScope() as outer:
        async with open_store(tmp_path / "a.db", writer="process") as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT)")])
            store.commit_nowait([Execute("INSERT INTO kv VALUES ('x')")],
                                on_commit=lambda results: heard.append(("committed", None)),
                                on_error=lambda error: heard.append(("failed", error)))
            await trio.testing.wait_all_tasks_blocked()  # the batch is in the child
            outer.cancel()
            await trio.sleep_forever()
    assert heard == [("committed", None)], heard
