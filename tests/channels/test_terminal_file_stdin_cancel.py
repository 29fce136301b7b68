"""A host that reads ``stdin_lines`` itself, with a file on stdin, can cancel the read and
exit. Before, a file was read in a worker thread through ``sys.stdin``'s buffered reader: a
cancel while a long line was skipped abandoned that thread holding the reader's lock, and
CPython aborted at exit ("Fatal Python error: _enter_buffered_busy", SIGABRT) instead of
exiting as the host said. 15b38b4 fixed it for ``tidings chat``'s own reading
(``supervisor/_chat_input.py``); the public helper reads by ``os.read`` now too."""

from __future__ import annotations

import pathlib
import signal
import subprocess
import sys

import pytest
import trio

_HOST = """
import signal, sys
import trio
from tidings.channels._terminal import stdin_lines

async def main():
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            async def read():
                async for _line in stdin_lines():
                    pass
            nursery.start_soon(read)
            async for _signum in signals:
                nursery.cancel_scope.cancel()
                break

trio.run(main)
sys.exit(7)
"""


def _read_from(pid: int) -> int:
    """How far the process *pid* has read its stdin (a file): its offset, from Linux's /proc."""
    for line in pathlib.Path(f"/proc/{pid}/fdinfo/0").read_text().splitlines():
        if line.startswith("pos:"):
            return int(line.split()[1])
    raise AssertionError("no pos in fdinfo")


@pytest.mark.skipif(not pathlib.Path("/proc/self/fdinfo").is_dir(), reason="Linux's /proc")
async def test_a_host_cancels_a_file_read_by_stdin_lines_and_exits(tmp_path) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as file:
        try:
            file.truncate(1 << 40)  # one line of a TiB (sparse: no disk), no newline
        except OSError:
            pytest.skip("no sparse file of a TiB here")
    with big.open("rb") as stdin:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _HOST], stdin=stdin, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, cwd=tmp_path)
    assert process.stderr is not None
    stderr = b""
    try:
        async with trio.open_nursery() as nursery:
            async def read_stderr() -> None:
                nonlocal stderr
                async for chunk in process.stderr:
                    stderr += chunk
            nursery.start_soon(read_stderr)
            with trio.fail_after(60):
                while True:  # polled: no event tells when another process reads
                    if _read_from(process.pid) > 1 << 22:  # past the limit: in the skip
                        break
                    await trio.sleep(0.01)
                process.send_signal(signal.SIGTERM)
                assert await process.wait() == 7, stderr
    finally:
        process.kill()
        await process.wait()
    said = stderr.decode()
    assert "Fatal Python error" not in said, said
    assert "Traceback" not in said, said
