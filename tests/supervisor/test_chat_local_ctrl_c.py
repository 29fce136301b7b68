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
import platform
import signal
import subprocess
import sys

import pytest
import trio

from ..pipes import collect_into

# As in a terminal: a suite started with SIGINT ignored would hand that on to the chat.
_CHAT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from tidings.supervisor.cli import main
sys.exit(main())
"""


_READ = {"x86_64": 0, "aarch64": 63}.get(platform.machine())
"""Linux's number of the read system call, as /proc/<pid>/task/<tid>/syscall shows it."""


def _reading_stdin(pid: int) -> bool:
    """Whether the process *pid* waits to read its stdin: a thread of it blocked in a read of
    it, or stdin watched by an epoll (trio's own reads, of a duplicate). Linux's /proc."""
    proc = pathlib.Path(f"/proc/{pid}")
    stdin = os.readlink(proc / "fd" / "0")

    def is_stdin(fd: str) -> bool:
        with contextlib.suppress(OSError):  # closed meanwhile
            return os.readlink(proc / "fd" / fd) == stdin
        return False

    for task in (proc / "task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            call = (task / "syscall").read_text().split()
            if len(call) > 1 and call[0] == str(_READ) and is_stdin(str(int(call[1], 16))):
                return True
    for info in (proc / "fdinfo").iterdir():
        with contextlib.suppress(OSError):
            for line in info.read_text().splitlines():
                if line.startswith("tfd:") and is_stdin(line.split()[1]):
                    return True
    return False


async def _interrupted_once_answered(tmp_path: pathlib.Path, terminal: bool
                                     ) -> tuple[int, str]:
    """Run the chat with a pipe (or a terminal) for stdin and a pipe for stdout, write one line
    and leave stdin open; once the answer is printed and the next line is being read, SIGINT.
    Its exit code and stderr."""
    if terminal:
        keyboard, tty = os.openpty()
        stdin: int = tty
    else:
        stdin = subprocess.PIPE
    try:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _CHAT, "chat", "--local", "--workspace", str(tmp_path),
             "--db", str(tmp_path / "chat.db")],
            stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    finally:
        if terminal:
            os.close(tty)
    if terminal:
        typing: trio.abc.SendStream = trio.lowlevel.FdStream(keyboard)
    else:
        assert process.stdin is not None
        typing = process.stdin
    assert process.stdout is not None
    assert process.stderr is not None
    stderr = bytearray()
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(collect_into, process.stderr, stderr)
            with trio.fail_after(60):
                await typing.send_all(b"hello\n")  # and stdin stays open
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
        await typing.aclose()
        await process.stdout.aclose()
        await process.wait()
    return code, stderr.decode()


@pytest.mark.skipif(not pathlib.Path("/proc/self/fdinfo").is_dir() or _READ is None,
                    reason="Linux's /proc")
@pytest.mark.parametrize("terminal", [
    pytest.param(False, id="a-pipe"),
    # `tidings chat --local > transcript.txt` typed into: input() has no readline without a
    # terminal for stdout, and reads sys.stdin's buffered reader, as a pipe was read.
    pytest.param(True, id="a-terminal-with-stdout-redirected"),
])
async def test_ctrl_c_while_stdin_stays_open_ends_the_chat_with_130(
        tmp_path: pathlib.Path, terminal: bool) -> None:
    code, stderr = await _interrupted_once_answered(tmp_path, terminal)
    assert "Fatal Python error" not in stderr, stderr
    assert "Traceback" not in stderr, stderr
    assert code == 130, stderr
