"""The writer child killed while a big frame is half written: the store fails with the one
error that says so (as when the child dies idle), and each request hears what became of it."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys

import pytest
import trio
import trio.testing

from tidings.errors import StoreError
from tidings.store import Execute, InsertRows, open_store

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="freezes the writer child with SIGSTOP and waitid")

BIG = 4 * 1024 * 1024
"""Bytes in the big request's value: far more than a pipe holds, so its send blocks mid-frame."""


async def _kill_mid_frame(db, heard: dict[str, list[tuple[str, object]]]) -> None:
    def callbacks(name: str) -> dict[str, object]:
        def tell(kind: str, what: object) -> None:
            heard.setdefault(name, []).append((kind, what))

        return {"on_commit": lambda results: tell("committed", results),
                "on_error": lambda error: tell("failed", error)}

    async with open_store(db, writer="process") as store:
        await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
        pid = store.writer.process_id
        assert pid is not None
        os.kill(pid, signal.SIGSTOP)
        await trio.to_thread.run_sync(os.waitid, os.P_PID, pid, os.WSTOPPED | os.WNOWAIT)
        store.commit_nowait([InsertRows("kv", ("k", "v"), (("whole", "v"),))],
                            **callbacks("whole"))
        await trio.testing.wait_all_tasks_blocked()  # sent whole: it fits in the pipe
        store.commit_nowait([InsertRows("kv", ("k", "v"), (("cut", "x" * BIG),))],
                            **callbacks("cut"))
        await trio.testing.wait_all_tasks_blocked()  # the writer waits on a full pipe
        os.kill(pid, signal.SIGKILL)
        await trio.sleep_forever()  # the writer's failure ends the store


async def test_a_child_killed_mid_frame_fails_the_store_with_one_clear_error(tmp_path) -> None:
    heard: dict[str, list[tuple[str, object]]] = {}
    with trio.fail_after(30):  # hang guard (real time: a real child process)
        with pytest.raises(StoreError, match="writer process exited"):
            await _kill_mid_frame(tmp_path / "a.db", heard)
    [(kind, error)] = heard["whole"]
    assert kind == "failed"
    assert "may or may not have committed" in str(error)
    [(kind, error)] = heard["cut"]
    assert kind == "failed"
    assert "stopped before this write committed" in str(error)
    conn = sqlite3.connect(tmp_path / "a.db")
    try:
        assert conn.execute("SELECT count(*) FROM kv").fetchone() == (0,)
    finally:
        conn.close()
