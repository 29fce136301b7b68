"""The writer child dies with its host (Linux ``PR_SET_PDEATHSIG``), and only then.

The kernel sends that signal when the *thread* that spawned the child ends, not its process. The
child was spawned from one of trio's worker threads (``trio.lowlevel.open_process`` runs
``Popen`` there), and trio ends a worker thread after 10 s without work: a host idle for 10 s
lost its writer child (``open_store`` failed with "the writer process exited", a runtime
restarted its writer every 10 s of quiet, and a batch in flight then "may or may not have
committed").

Spawning it from the loop's thread, the writer makes the child's pipes itself: a spawn that
fails (the process is out of descriptors) must leave none of them open.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import pytest
import trio

from tidings.store import Execute, InsertRows, open_store, prepare_store

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="PR_SET_PDEATHSIG and /proc/self/task are Linux's")


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("Trio thread")]


async def _end_worker_threads() -> None:
    """End every worker thread of trio's cache, in the kernel too (its task gone from
    ``/proc/self/task``: a parent-death signal it owes has been sent by then).

    With ``IDLE_TIMEOUT`` 0 a worker ends after its next job: each idle one gets one (a job
    goes to an idle worker before a new thread is made; the barrier keeps each job on its own
    thread)."""
    idle = _workers()
    assert idle, "the store ran nothing in a worker thread"
    barrier = threading.Barrier(len(idle), timeout=20)
    async with trio.open_nursery() as nursery:
        for _ in idle:
            nursery.start_soon(trio.to_thread.run_sync, barrier.wait)
    _wait_ended([*idle, *_workers()])


def _wait_ended(threads: list[threading.Thread]) -> None:
    """Until *threads* have ended in the kernel too (each on its way out: a brief block)."""
    for thread in threads:
        thread.join()
    while any(os.path.exists(f"/proc/self/task/{t.native_id}") for t in threads):
        time.sleep(0.0001)


async def test_the_writer_child_outlives_the_worker_threads_of_its_host(
        tmp_path, monkeypatch) -> None:
    with trio.fail_after(30):  # hang guard (real time: a real child process)
        async with open_store(tmp_path / "a.db", writer="process") as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            pid = store.writer.process_id
            assert pid is not None
            # trio ends a worker thread after IDLE_TIMEOUT (10 s) without work; at 0 each ends
            # after its job, so the test sees at once what a host saw after 10 quiet seconds.
            monkeypatch.setattr(trio._core._thread_cache, "IDLE_TIMEOUT", 0)
            await _end_worker_threads()
            await store.commit([InsertRows("kv", ("k", "v"), (("k", "v"),))])
            assert store.writer.process_id == pid
            assert await store.read(lambda c: c.execute("SELECT k FROM kv").fetchall()) \
                == [("k",)]


async def test_a_writer_child_that_cannot_be_spawned_leaves_no_descriptor_open(
        tmp_path, monkeypatch) -> None:
    pipe = os.pipe
    calls = 0

    def second_pipe_fails() -> tuple[int, int]:  # the process is out of descriptors (EMFILE)
        nonlocal calls
        calls += 1
        if calls == 2:
            raise OSError(24, "Too many open files")
        return pipe()

    await prepare_store(tmp_path / "a.db")  # its files made, so only the writer opens more
    before = sorted(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "pipe", second_pipe_fails)
    with pytest.raises(OSError, match="Too many open files"):
        async with open_store(tmp_path / "a.db", writer="process"):
            pass
    monkeypatch.setattr(os, "pipe", pipe)
    assert calls == 2
    assert sorted(os.listdir("/proc/self/fd")) == before
