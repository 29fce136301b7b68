"""SIGTERM and Ctrl-C end ``tidings chat --local < big.bin`` with 143 and 130 while it still
reads the file (README: "SIGTERM with 143, while it waits for a piped line too"). Before, a
file (and any stdin that is neither a pipe nor a terminal: ``< /dev/zero``) was read by
``stdin_lines`` in a worker thread, in ``sys.stdin``'s buffered reader: a long line's skip
(the README's ``tidings chat < big.bin``) held that reader's lock when the signal abandoned
the thread, and at interpreter exit CPython aborted ("Fatal Python error:
_enter_buffered_busy", SIGABRT, exit 134) instead of exiting 143 or 130. The file is now read
as a pipe is, a chunk at a time, by ``os.read`` in the worker thread: it holds no lock."""

from __future__ import annotations

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


def _read_from(pid: int) -> int:
    """How far the process *pid* has read its stdin (a file): its offset, from Linux's /proc."""
    for line in pathlib.Path(f"/proc/{pid}/fdinfo/0").read_text().splitlines():
        if line.startswith("pos:"):
            return int(line.split()[1])
    raise AssertionError("no pos in fdinfo")


@pytest.mark.skipif(not pathlib.Path("/proc/self/fdinfo").is_dir(), reason="Linux's /proc")
@pytest.mark.parametrize(("signum", "code"), [
    pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
    pytest.param(signal.SIGINT, 130, id="ctrl-c"),
])
async def test_a_signal_while_a_file_is_read_ends_the_chat_with_its_code(
        tmp_path: pathlib.Path, signum: int, code: int) -> None:
    big = tmp_path / "big.bin"
    with big.open("wb") as file:
        try:
            file.truncate(1 << 40)  # one line of a TiB (sparse: no disk), no newline
        except OSError:
            pytest.skip("no sparse file of a TiB here")
    with big.open("rb") as stdin:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _CHAT, "chat", "--local", "--workspace", str(tmp_path),
             "--db", str(tmp_path / "chat.db")],
            stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
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
                    if _read_from(process.pid) > 0:
                        break
                    await trio.sleep(0.01)
                process.send_signal(signum)
                assert await process.wait() == code, stderr
    finally:
        process.kill()
        await process.wait()
    said = stderr.decode()
    assert "Fatal Python error" not in said, said
    assert "Traceback" not in said, said
