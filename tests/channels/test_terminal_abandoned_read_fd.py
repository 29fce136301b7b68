"""A read of stdin that a cancel abandoned reads on from the file it began on, never from
another that the host opened later under the same descriptor number.

:func:`stdin_lines` reads a file or a pipe by ``os.read`` in a worker thread that a cancel
abandons. That thread went on (the rest of a line, a long line's skip) reading stdin's
descriptor *number*: once the host closed stdin, the next file it opened took that number,
and the abandoned thread read (and dropped) that file's bytes: a later reader of it, a test's
pipe or a host's socket, waited for data already taken. It reads a duplicate of its own now.
So does ``tidings chat``'s :func:`input_lines` with a regular file on stdin (``tidings chat <
file``), read in a worker thread too: it read stdin's own number, and its abandoned read took
the bytes of the pipe opened after it.
"""

from __future__ import annotations

import os
import pathlib
import sys
import threading
from collections.abc import AsyncIterator, Callable

import pytest
import trio

from tidings.channels._terminal import stdin_lines
from tidings.supervisor._chat_input import input_lines

from ..real_time import fail_after_real


@pytest.mark.parametrize(("reader", "kind"), [(stdin_lines, "a-pipe"), (input_lines, "a-file")])
async def test_an_abandoned_read_never_reads_a_file_opened_after_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path,
        reader: Callable[[], AsyncIterator[object]], kind: str) -> None:
    real_read = os.read
    entered, gate, returned = threading.Event(), threading.Event(), threading.Event()
    read_from: list[int] = []  # the inode of each descriptor read

    def gated_read(fd: int, n: int) -> bytes:
        if not entered.is_set():
            entered.set()
            gate.wait()  # the first read starts only once the host reopened the number
        read_from.append(os.fstat(fd).st_ino)
        try:
            return real_read(fd, n)
        finally:
            returned.set()

    if kind == "a-pipe":  # (input_lines has trio wait for a pipe: no thread)
        read_end, write_end = os.pipe()
        os.write(write_end, b"abc")  # a line begun, not ended: the reader reads on
    else:
        (tmp_path / "stdin.txt").write_bytes(b"abc")
        read_end, write_end = os.open(tmp_path / "stdin.txt", os.O_RDONLY), -1
    first_pipe = os.fstat(read_end).st_ino
    later_read = later_write = -1
    try:
        with fail_after_real(20):  # a guard against hanging, not a wait
            with open(read_end, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read here
                monkeypatch.setattr(sys, "stdin", stdin)
                monkeypatch.setattr(os, "read", gated_read)
                async with trio.open_nursery() as nursery:
                    async def read() -> None:
                        async for _line in reader():
                            pass

                    nursery.start_soon(read)
                    await trio.to_thread.run_sync(entered.wait, abandon_on_cancel=True)
                    nursery.cancel_scope.cancel()  # the read is abandoned in its thread
            # stdin closed; the host opens another pipe, which takes stdin's number
            later_read, later_write = os.pipe()
            if later_read != read_end:
                pytest.skip("the new pipe did not take stdin's descriptor number")
            os.write(later_write, b"not stdin's\n")
            gate.set()
            await trio.to_thread.run_sync(returned.wait, abandon_on_cancel=True)
        assert set(read_from) == {first_pipe}  # every read, before and after the reopen
        monkeypatch.setattr(os, "read", real_read)
        os.set_blocking(later_read, False)
        assert real_read(later_read, 100) == b"not stdin's\n"  # all still there
    finally:
        gate.set()
        if write_end >= 0:
            os.close(write_end)  # the abandoned read's end of input: its thread ends
        for fd in (later_read, later_write):
            if fd >= 0:
                os.close(fd)
