"""A writer process that dies with batches unanswered (each may or may not have committed) calls
the writer's listeners as a committed batch does: ``rt.events()`` followers wait on them, and
the events such a batch may have written came to them only at the next commit (none, on an idle
runtime). A spurious wake is harmless: a follower reads again and finds nothing new."""

from __future__ import annotations

import os
import signal
import sys

import pytest
import trio
import trio.testing

from tidings.errors import StoreError
from tidings.store import Execute, InsertRows, open_store

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="freezes the writer child with SIGSTOP and waitid")


async def _kill_with_a_batch_unanswered(db, woken: list[str],
                                        failed: list[BaseException]) -> None:
    async with open_store(db, writer="process") as store:
        await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
        store.writer.add_listener(lambda: woken.append("wake"))
        pid = store.writer.process_id
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        await trio.to_thread.run_sync(os.waitid, os.P_PID, pid, os.WSTOPPED | os.WNOWAIT)
        store.commit_nowait([InsertRows("kv", ("k", "v"), (("a", "v"),))],
                            on_commit=lambda results: woken.append("committed"),
                            on_error=failed.append)
        await trio.testing.wait_all_tasks_blocked()  # sent to the stopped child
        assert woken == []
        os.kill(pid, signal.SIGKILL)
        await trio.sleep_forever()  # the writer's failure ends the store


async def test_a_writer_process_that_dies_unanswered_wakes_the_listeners(tmp_path) -> None:
    woken: list[str] = []
    failed: list[BaseException] = []
    with trio.fail_after(30):  # hang guard (real time: a real child process)
        with pytest.raises(StoreError, match="writer process exited"):
            await _kill_with_a_batch_unanswered(tmp_path / "a.db", woken, failed)
    assert len(failed) == 1
    assert "may or may not have committed" in str(failed[0])
    assert woken == ["wake"]
