"""``tidings chat --local > transcript.txt`` typed into on a terminal: what it writes to the
redirected stdout is the chat's lines alone. Before, every line came after the terminal's
prompt redraw (``\\r``, an erase-line escape, then the prompt again), written into the file too:
the redraw was chosen by stdin alone, although only a terminal on stdout shows a prompt."""

from __future__ import annotations

import os
import subprocess
import sys

import trio


async def test_a_redirected_stdout_gets_no_terminal_redraws(tmp_path) -> None:
    keyboard, tty = os.openpty()
    try:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
             "--workspace", str(tmp_path), "--db", str(tmp_path / "chat.db")],
            stdin=tty, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path)
    finally:
        os.close(tty)
    typing = trio.lowlevel.FdStream(keyboard)
    assert process.stdout is not None
    out = b""
    with trio.fail_after(60):  # hang guard
        async with typing:
            await typing.send_all(b"hello\n")
            while b"> hello\n" not in out:
                chunk = await process.stdout.receive_some()
                assert chunk, out
                out += chunk
            await typing.send_all(b"\x04")  # Ctrl-D: end of input
            while chunk := await process.stdout.receive_some():
                out += chunk
            assert await process.wait() == 0
    assert b"\x1b" not in out, out
    assert b"\r" not in out, out
    assert "terminal> hello" in out.decode().splitlines()  # (its lifecycle lines around it)
