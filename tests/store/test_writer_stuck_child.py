"""A writer child that stops reading (stuck on a lock, a disk): the process writer must still
stop when cancelled, answer every request exactly once, and never run a frame cut short.

The child is frozen with SIGSTOP so its stdin pipe fills up; the writer then blocks mid-frame.
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

from tidings.store import InsertRows, WriteRequest, _writer, prepare_store
from tidings.store._real_time import move_on_after_real
from tidings.store._writer_process import ANSWER_GRACE

from .conftest import alive

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="freezes the writer child with SIGSTOP and waitid")

BIG = 256 * 1024
"""Bytes in the second request's value: more than a pipe holds, so its send blocks mid-frame."""


def _row(key: str, value: str = "v") -> InsertRows:
    return InsertRows("kv", ("k", "v"), ((key, value),))


class _Heard:
    """Every callback each request got (there must be exactly one)."""

    def __init__(self) -> None:
        self.calls: dict[str, list[tuple[str, object]]] = {}

    def request(self, name: str, value: str = "v") -> WriteRequest:
        def tell(kind: str, what: object) -> None:
            self.calls.setdefault(name, []).append((kind, what))

        return WriteRequest([_row(name, value)],
                            on_commit=lambda results: tell("committed", results),
                            on_error=lambda error: tell("failed", error))


async def _freeze(pid: int) -> None:
    """SIGSTOP the child and return once it is stopped (it then reads nothing more)."""
    os.kill(pid, signal.SIGSTOP)
    await trio.to_thread.run_sync(os.waitid, os.P_PID, pid, os.WSTOPPED | os.WNOWAIT)


def _keys(db) -> list[str]:
    conn = sqlite3.connect(db)
    try:
        return sorted(k for (k,) in conn.execute("SELECT k FROM kv"))
    finally:
        conn.close()


async def _cancel_mid_frame(db, heard: _Heard, *, thaw_after_cancel: bool) -> tuple[int, bool]:
    """Serve a process writer, freeze its child, send a small request (sent whole) and a big
    one (blocks mid-frame), then cancel the writer. With *thaw_after_cancel*, the child runs
    again once the writer has been cancelled. Returns the child's pid and whether the
    cancelled writer ended by itself (otherwise the child is killed so the test can end)."""
    store = await prepare_store(db, writer="process")
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")
    conn.close()
    send, receive = trio.open_memory_channel[WriteRequest](math.inf)
    done = trio.Event()
    serve_scope = trio.CancelScope()
    pid, ended = 0, False

    async def serve(task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        with serve_scope:
            await store.writer.serve(receive, task_status=task_status)
        done.set()

    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(serve)
            pid = store.writer.process_id
            assert pid is not None
            await _freeze(pid)
            send.send_nowait(heard.request("whole"))
            await trio.testing.wait_all_tasks_blocked()  # sent whole: it fits in the pipe
            send.send_nowait(heard.request("cut", "x" * BIG))
            await trio.testing.wait_all_tasks_blocked()  # the writer waits on a full pipe
            assert heard.calls == {}
            serve_scope.cancel()
            if thaw_after_cancel:
                await trio.testing.wait_all_tasks_blocked()  # waiting for answers it is owed
                os.kill(pid, signal.SIGCONT)
            with move_on_after_real(4 * ANSWER_GRACE):  # hang guard (the grace is real time)
                await done.wait()
            ended = done.is_set()
            if not ended:
                os.kill(pid, signal.SIGKILL)  # unblock the stuck send so the test can end
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup:  # the stuck send's broken pipe, after that kill
        if ended or not pid:
            raise
    finally:
        store.close()
    return pid, ended


async def test_a_writer_whose_child_stopped_reading_still_stops_when_cancelled(
        tmp_path, autojump_clock, caplog, monkeypatch) -> None:
    monkeypatch.setattr(_writer, "ANSWER_GRACE", 0.5)  # real seconds: as well as 10, sooner
    heard = _Heard()
    pid, ended = await _cancel_mid_frame(tmp_path / "a.db", heard, thaw_after_cancel=False)
    assert ended, "the cancelled writer stayed blocked sending to a child that reads nothing"
    assert not alive(pid)
    assert f"event=writer_process_unanswered batches=1 grace=0.5 pid={pid}" \
        in caplog.text
    assert sorted(heard.calls) == ["cut", "whole"]
    assert all(len(calls) == 1 for calls in heard.calls.values())
    # Sent whole, unanswered when the grace ran out: the writer cannot know.
    [(kind, error)] = heard.calls["whole"]
    assert kind == "failed"
    assert "may or may not have committed" in str(error)
    # Cut short: the child never had it, so it never ran.
    [(kind, error)] = heard.calls["cut"]
    assert kind == "failed"
    assert "stopped before this write committed" in str(error)
    assert _keys(tmp_path / "a.db") == []


async def test_a_frame_cut_short_by_a_cancel_never_runs_even_if_the_child_reads_on(
        tmp_path) -> None:
    heard = _Heard()
    with trio.fail_after(4 * ANSWER_GRACE):  # hang guard (real time: the child does real work)
        pid, ended = await _cancel_mid_frame(tmp_path / "a.db", heard, thaw_after_cancel=True)
    assert ended
    assert not alive(pid)
    assert heard.calls["whole"] == [("committed", [None])]
    [(kind, error)] = heard.calls["cut"]
    assert kind == "failed"
    assert "stopped before this write committed" in str(error)
    assert _keys(tmp_path / "a.db") == ["whole"]  # the cut frame's bytes ran nothing


async def test_a_cancelled_pipe_send_raises_only_before_the_last_byte() -> None:
    """What the writer relies on: trio's pipe ``send_all`` checkpoints before its first byte
    and waits only while bytes remain, so a cancelled send never handed the whole frame over.
    """
    read_fd, write_fd = os.pipe()
    stream = trio.lowlevel.FdStream(write_fd)
    try:
        with trio.CancelScope() as scope:
            scope.cancel()
            await stream.send_all(b"x" * 10)
        assert _drain(read_fd) == 0  # cancelled before the first byte
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def send() -> None:
                with scope:
                    await stream.send_all(b"x" * BIG)

            nursery.start_soon(send)
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()
        assert 0 < _drain(read_fd) < BIG  # cut short, and it said so
    finally:
        await stream.aclose()
        os.close(read_fd)


def _drain(fd: int) -> int:
    os.set_blocking(fd, False)
    total = 0
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return total
        total += len(chunk)
