"""SIGTERM (``kill PID``, ``timeout 600 tidings chat``) ends ``tidings chat --url`` as Ctrl-C
does: a cancel, exit 143 (128 + SIGTERM). Before, it killed the chat by its default action,
and one typed into on a terminal left it in readline's modes (no echo, no line editing by the
terminal) for whatever ran next in it; a piped one closed no connection (``1006``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import trio

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="a pseudo-terminal")
termios = pytest.importorskip("termios")

# As in a terminal: a suite started with SIGINT or SIGTERM ignored would hand that on.
_CHAT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
from tidings.supervisor.cli import main
sys.exit(main())
"""


async def test_sigterm_leaves_the_terminal_in_its_modes(rt, serve_gateway, tmp_path) -> None:
    keyboard, tty = os.openpty()
    try:
        modes = termios.tcgetattr(tty)
        async with serve_gateway(rt) as (_gateway, url):
            process = await trio.lowlevel.open_process(
                [sys.executable, "-c", _CHAT, "chat", "--token", "gateway-test-token", "--url",
                 url, "--conversation", "sigterm"],
                stdin=tty, stdout=tty, stderr=subprocess.DEVNULL, cwd=tmp_path)
            terminal = trio.lowlevel.FdStream(keyboard)
            try:
                with trio.fail_after(60):
                    screen = b""
                    while not screen.endswith(b"> "):  # welcomed; readline has the terminal
                        screen += await terminal.receive_some()
                    assert termios.tcgetattr(tty) != modes  # (readline's: no echo)
                    process.send_signal(signal.SIGTERM)
                    assert await process.wait() == 143
                assert termios.tcgetattr(tty) == modes  # (before the terminal is closed)
            finally:
                process.kill()
                await process.wait()
                await terminal.aclose()
    finally:
        os.close(tty)


async def test_sigterm_ends_a_piped_chat_with_143(rt, serve_gateway, tmp_path) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _CHAT, "chat", "--token", "gateway-test-token", "--url", url,
             "--conversation", "sigterm-piped"], stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
        try:
            with trio.fail_after(60):
                assert process.stderr is not None
                said = b""
                while b"/help for commands" not in said:  # connected, waiting for a line
                    said += await process.stderr.receive_some()
                process.send_signal(signal.SIGTERM)
                assert await process.wait() == 143
                said += b"".join([chunk async for chunk in process.stderr])
            assert b"Traceback" not in said, said
        finally:
            process.kill()
            assert process.stdin is not None
            await process.stdin.aclose()
            await process.wait()
