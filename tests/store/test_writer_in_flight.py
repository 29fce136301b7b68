"""The process writer keeps at most ``MAX_IN_FLIGHT`` batches unanswered by its child: the one
committing and the next. A child that falls behind otherwise got a queue of small batches, each
a commit of its own; held back, what arrives meanwhile goes as one batch when an answer comes.

The child is frozen with SIGSTOP (it reads nothing and answers nothing until SIGCONT), so what
the writer has sent it by then is exactly what it has when it runs again.
"""

from __future__ import annotations

import math
import os
import signal
import sqlite3
import sys

import pytest
import trio
import trio.testing

from tidings.store import InsertRows, WriteRequest, prepare_store
from tidings.store._writer_process import MAX_IN_FLIGHT

from ..real_time import fail_after_real

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="freezes the writer child with SIGSTOP and waitid")


async def _freeze(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)
    await trio.to_thread.run_sync(os.waitid, os.P_PID, pid, os.WSTOPPED | os.WNOWAIT)


@pytest.mark.parametrize("later", [1, 3, 6])
async def test_writes_behind_a_busy_child_go_as_one_batch(tmp_path, later) -> None:
    db = tmp_path / "a.db"
    store = await prepare_store(db, writer="process")
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY)")
    conn.close()
    send, receive = trio.open_memory_channel[WriteRequest](math.inf)
    total = MAX_IN_FLIGHT + later
    committed: list[str] = []
    all_in = trio.Event()

    def request(key: str) -> WriteRequest:
        def done(results: object) -> None:
            committed.append(key)
            if len(committed) == total:
                all_in.set()
        return WriteRequest([InsertRows("kv", ("k",), ((key,),))], on_commit=done)

    try:
        with fail_after_real(30):
            async with trio.open_nursery() as nursery:
                await nursery.start(store.writer.serve, receive)
                pid = store.writer.process_id
                assert pid is not None
                await _freeze(pid)
                # One at a time, each taken alone: the writer would send each as its own batch.
                for i in range(total):
                    send.send_nowait(request(f"k{i}"))
                    await trio.testing.wait_all_tasks_blocked()
                os.kill(pid, signal.SIGCONT)
                await all_in.wait()
                send.close()
    finally:
        store.close()
    stats = store.writer.statistics()
    assert committed == [f"k{i}" for i in range(total)]  # in order, each once
    # The first MAX_IN_FLIGHT went alone (the child had room); the rest waited, and went
    # together once the child answered one.
    assert (stats.batches, stats.largest_batch) == (MAX_IN_FLIGHT + 1, later)
