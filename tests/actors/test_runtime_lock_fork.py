"""A process the host forks while its runtime runs (a ``multiprocessing`` or
``ProcessPoolExecutor`` worker: ``fork`` is Linux's default start method) shared the runtime
lock's open file, and an ``flock`` is let go only once every descriptor of that open file is
closed (``O_CLOEXEC`` closes it in a child that execs, not in a plain fork). So the database
stayed locked after the runtime had closed, and after a kill of the host for as long as such
a worker lived: every restart was refused "already open in another runtime (pid <the dead
host>)". A forked child now closes its copy at once: the lock is the runtime's alone."""

from __future__ import annotations

import os

import trio

import tidings


async def test_a_child_forked_while_the_runtime_runs_does_not_keep_the_database_locked(
        db_path, workspace) -> None:
    readable, writable = os.pipe()
    forked, ready = os.pipe()
    async with tidings.open_runtime(db_path, workspace=workspace):
        pid = os.fork()
        if pid == 0:  # the host's worker: it lives on after the runtime has closed
            try:
                os.close(writable)
                os.write(ready, b"!")  # it runs: the fork's hooks have run in it
                os.read(readable, 1)
            finally:
                os._exit(0)
        # A child the system has not yet let run holds the lock's open file until it does:
        # wait until it has run (on a loaded machine that took longer than the close below,
        # and the reopen was refused "already open in another runtime").
        os.close(ready)
        assert await trio.to_thread.run_sync(os.read, forked, 1) == b"!"
        os.close(forked)
    os.close(readable)
    try:
        async with tidings.open_runtime(db_path, workspace=workspace) as again:
            assert again.store.epoch == 2
    finally:
        os.close(writable)  # the worker ends
        await trio.to_thread.run_sync(os.waitpid, pid, 0)
