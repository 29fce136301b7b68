"""A write whose ``await`` returned survives ``kill -9`` of the process."""

from __future__ import annotations

import signal
import sqlite3
import sys
import textwrap

import pytest
import trio

CHILD = textwrap.dedent("""
    import sys, trio
    from tidings.store import Call, InsertRows, open_store

    async def main(path, writer):
        async with open_store(path, writer=writer) as store:
            await store.commit([Call(lambda c: c.execute(
                "CREATE TABLE IF NOT EXISTS kv (k INTEGER PRIMARY KEY, v TEXT)"))])
            i = 0
            while True:
                i += 1
                await store.commit([InsertRows("kv", ("k", "v"), ((i, "x" * 100),))])
                print(i, flush=True)

    trio.run(main, sys.argv[1], sys.argv[2])
""")


async def _run_and_kill(db, kill_after: int, writer: str) -> int:
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", CHILD, str(db), writer], stdout=-1)
    assert process.stdout is not None
    buffer = b""
    last = 0
    try:
        while last < kill_after:
            chunk = await process.stdout.receive_some()
            assert chunk, "child exited early"
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            if lines:
                last = int(lines[-1])
        process.send_signal(signal.SIGKILL)  # right after the await returned in the child
    finally:
        process.kill()
        await process.wait()
    assert process.returncode == -signal.SIGKILL
    return last


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_acknowledged_writes_survive_sigkill(tmp_path, writer) -> None:
    db = tmp_path / "crash.db"
    for kill_after in (1, 17, 60):
        acknowledged = await _run_and_kill(db, kill_after, writer)
        conn = sqlite3.connect(db)
        keys = {k for (k,) in conn.execute("SELECT k FROM kv")}
        conn.execute("DROP TABLE kv")
        conn.commit()
        conn.close()
        assert set(range(1, acknowledged + 1)) <= keys
