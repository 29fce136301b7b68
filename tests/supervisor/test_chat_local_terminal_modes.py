"""Ctrl-C in ``tidings chat --local`` (or ``--url``) typed into on a terminal leaves the
terminal as it found it. Before, the ``input()`` that Ctrl-C abandoned (in its worker thread,
in readline) kept the terminal in readline's modes at exit: no echo, no line editing by the
terminal, so what was typed next into the shell's programs (``cat``, a password prompt) was
not shown. The modes of the terminal are now put back when the read is abandoned."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys

import pytest
import trio

# As in a terminal: a suite started with SIGINT (or SIGTERM) ignored would hand that on to the
# chat.
_CHAT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
from tidings.supervisor.cli import main
sys.exit(main())
"""

termios = pytest.importorskip("termios")


# SIGTERM (`kill PID`, `timeout 600 tidings chat --local`) killed the chat by its default
# action, with readline's modes on the terminal (no echo): it now ends the chat as Ctrl-C
# does, exit 143 (128 + SIGTERM).
@pytest.mark.parametrize(("sent", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
async def test_a_signal_that_ends_the_chat_leaves_the_terminal_in_its_modes(
        tmp_path: pathlib.Path, sent: signal.Signals, code: int) -> None:
    keyboard, tty = os.openpty()
    try:
        modes = termios.tcgetattr(tty)
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _CHAT, "chat", "--local", "--workspace", str(tmp_path),
             "--db", str(tmp_path / "chat.db")],
            stdin=tty, stdout=tty, stderr=subprocess.DEVNULL, cwd=tmp_path)
        terminal = trio.lowlevel.FdStream(keyboard)
        try:
            with trio.fail_after(60):
                screen = b""
                while not screen.endswith(b"you> "):  # readline has the terminal
                    screen += await terminal.receive_some()
                assert termios.tcgetattr(tty) != modes  # (readline's: no echo)
                process.send_signal(sent)
                assert await process.wait() == code
            assert termios.tcgetattr(tty) == modes  # (before the terminal is closed)
        finally:
            process.kill()
            await process.wait()
            await terminal.aclose()
    finally:
        os.close(tty)
