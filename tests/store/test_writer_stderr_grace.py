"""The writer's stderr grace is real seconds, whatever clock the host's trio run keeps.

Once the writer child has been waited for, the host reads its stderr pipe for at most
``STDERR_GRACE`` (2 s) more: a process the child started may hold the pipe open for ever. That
grace was a deadline on trio's clock, so under a user's autojump ``MockClock`` it passed the
moment the run loop was idle: what such a process wrote just after the child (a helper saying
why it ends, a resource tracker's warning) was dropped, though it came within milliseconds.
"""

from __future__ import annotations

import sys
import threading

import pytest
import trio
import trio.testing

from tidings.store import Execute, _writer_stderr, open_store

from .test_writer_stderr import _commit_in_a_writer_process, _hooked, _relayed

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the writer child's pipes")

# A helper that holds the child's stderr and writes there once the child has died: it reads
# a pipe whose only write end the child holds, and that read ends with the child.
_HELPER = """\
    import subprocess
    held, holder = os.pipe()
    subprocess.Popen([sys.executable, '-c', 'import sys; sys.stdin.buffer.read(); '
                      'sys.stderr.write("the helper saw the writer go\\\\n")'], stdin=held)
    os.close(held)
"""


@pytest.fixture
def user_autojump_clock() -> trio.testing.MockClock:
    """A user's autojump clock: it jumps the moment the run loop is idle."""
    return trio.testing.MockClock(autojump_threshold=0)


async def test_the_grace_for_the_writers_stderr_is_real_time_under_autojump(
        tmp_path, monkeypatch, caplog, user_autojump_clock) -> None:
    _hooked(tmp_path, monkeypatch, "connect_writer", _HELPER)
    await _commit_in_a_writer_process(tmp_path, caplog)
    assert "the helper saw the writer go" in _relayed(caplog)


# A process the child starts that holds its stderr a while (longer than the grace) and then
# ends, so a read the grace never cut short ends too, later.
_HOLDER = """\
    import subprocess
    subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(8)'])
"""


async def test_the_grace_still_ends_the_read_with_no_thread_to_spare(
        tmp_path, monkeypatch, caplog) -> None:
    """When no thread can be started for the grace (the process is at its thread limit),
    the store still closes, its read of a held pipe ended by the grace on trio's clock (the
    real one here): the close neither raises that the thread could not start nor waits for
    the holder to end."""

    def no_thread(self) -> None:
        raise RuntimeError("can't start new thread")

    _hooked(tmp_path, monkeypatch, "connect_writer", _HOLDER)
    monkeypatch.setattr(threading.Timer, "start", no_thread)
    monkeypatch.setattr(_writer_stderr, "STDERR_GRACE", 0.5)  # as well as 2 s, sooner
    with trio.fail_after(30):  # the run's own (real) clock: no timer thread can guard it
        start = trio.current_time()
        async with open_store(tmp_path / "a.db", writer="process") as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT)")])
        assert trio.current_time() - start < 6  # the grace, not the holder (8 s)
