"""Ctrl-C (SIGINT) ends ``tidings chat --local`` with exit 130 while its piped stdin stays
open. Before, the pipe was read by ``stdin_lines`` in a worker thread that Ctrl-C abandoned,
blocked in ``sys.stdin``'s buffered reader and holding its lock: at interpreter exit CPython
could not take it and aborted ("Fatal Python error: _enter_buffered_busy", SIGABRT) whenever
Ctrl-C came while that read waited (a chat between turns: under load, half the time), as
``tidings chat --url`` did (``tests/gateway/test_chat_client_ctrl_c.py``,
``supervisor/_chat_input.py``). The pipe is now read by trio itself, as there."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys

import pytest
import trio

# As in a terminal: a suite started with SIGINT ignored would hand that on to the chat.
_CHAT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from tidings.supervisor.cli import main
sys.exit(main())
"""


def _reading_stdin(pid: int) -> bool:
    """Whether the process *pid* waits for its stdin (a pipe) to be read: a thread of it
    blocked reading a pipe (the only pipe it reads), or the pipe watched by an epoll (trio's
    own reads). Linux's /proc."""
    proc = pathlib.Path(f"/proc/{pid}")
    for task in (proc / "task").iterdir():
        if (task / "wchan").read_text().endswith("pipe_read"):
            return True
    stdin = os.readlink(proc / "fd" / "0")
    for info in (proc / "fdinfo").iterdir():
        for line in info.read_text().splitlines():
            if line.startswith("tfd:"):
                watched = line.split()[1]
                with contextlib.suppress(OSError):  # closed meanwhile
                    if os.readlink(proc / "fd" / watched) == stdin:
                        return True
    return False


async def _interrupted_once_answered(tmp_path: pathlib.Path) -> tuple[int, str]:
    """Run the chat with a pipe for stdin, write one line and leave the pipe open; once the
    answer is printed and the next line is being read, SIGINT. Its exit code and stderr."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", _CHAT, "chat", "--local", "--workspace", str(tmp_path),
         "--db", str(tmp_path / "chat.db")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert process.stdin is not None
    assert process.stdout is not None
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
                await process.stdin.send_all(b"hello\n")  # and the pipe stays open
                stdout = b""
                while b"terminal> hello\n" not in stdout:
                    chunk = await process.stdout.receive_some()
                    assert chunk, (stdout, stderr)
                    stdout += chunk
                while True:  # polled: no event tells when another process reads
                    if _reading_stdin(process.pid):
                        break
                    await trio.sleep(0.01)
                process.send_signal(signal.SIGINT)
                code = await process.wait()
    finally:
        process.kill()
        await process.stdin.aclose()
        await process.stdout.aclose()
        await process.wait()
    return code, stderr.decode()


@pytest.mark.skipif(not pathlib.Path("/proc/self/fdinfo").is_dir(), reason="Linux's /proc")
async def test_ctrl_c_while_a_pipe_stays_open_ends_the_chat_with_130(
        tmp_path: pathlib.Path) -> None:
    code, stderr = await _interrupted_once_answered(tmp_path)
    assert "Fatal Python error" not in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert code == 130, stderr
