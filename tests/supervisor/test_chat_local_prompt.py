"""``tidings chat --local`` typed into on a terminal shows its prompt once. Before, a line
printed between a line read and the next ``input()`` (the turn's ``[started]``) was followed
by the prompt put back (``redraw``), and then ``input()`` printed its own: ``you> you> ``. The
prompt is now put back only while ``input()`` shows it."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys

import pytest
import trio


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="a pseudo-terminal")
async def test_the_prompt_is_shown_once_after_each_line(tmp_path: pathlib.Path) -> None:
    keyboard, tty = os.openpty()
    try:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
             "--workspace", str(tmp_path), "--db", str(tmp_path / "chat.db")],
            stdin=tty, stdout=tty, stderr=subprocess.DEVNULL, cwd=tmp_path)
    finally:
        os.close(tty)
    screen = b""
    terminal = trio.lowlevel.FdStream(keyboard)
    try:
        with trio.fail_after(60):
            while not screen.endswith(b"you> "):  # the first prompt
                screen += await terminal.receive_some()
            await terminal.send_all(b"hello\n")
            # Everything said: the reply, the turn's end, and a prompt after them.
            while not (b"terminal> hello" in screen and b"[completed]" in screen
                       and screen.endswith(b"you> ")):
                screen += await terminal.receive_some()
    finally:
        process.kill()
        await process.wait()
        await terminal.aclose()
    assert b"you> you> " not in screen, screen
    # What the terminal shows: every line once, and one prompt at the end.
    shown = [line.rsplit(b"\x1b[K", 1)[-1] for line in screen.split(b"\r\n")]
    assert shown[0] == b"you> hello"
    assert sorted(shown[1:-1]) == [b"  [completed]", b"  [started]", b"terminal> hello"]
    assert shown[-1] == b"you> "


_AGENTS = pathlib.Path(__file__).parent / "agents"

# As in a terminal: a suite started with SIGINT ignored would hand that on to the chat.
_CHAT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from tidings.supervisor.cli import main
sys.exit(main())
"""


async def _rest_of(terminal: trio.lowlevel.FdStream) -> bytes:
    """What the terminal still shows once the chat's process has exited."""
    rest = b""
    while True:
        try:
            data = await terminal.receive_some()
        except (trio.BrokenResourceError, OSError):  # no process has the terminal open
            return rest
        if not data:
            return rest
        rest += data


# Ctrl-C during a turn abandoned the read in input(), its prompt still counted as shown: the
# lines the runtime's stop printed after it ('[cancelled: shutdown]') each put 'you> ' back,
# so the chat ended on a prompt nothing would read, and the shell's own prompt came after it.
@pytest.mark.skipif(not hasattr(os, "openpty"), reason="a pseudo-terminal")
async def test_no_prompt_is_put_back_once_ctrl_c_ended_the_chat(tmp_path: pathlib.Path) -> None:
    keyboard, tty = os.openpty()
    try:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _CHAT, "chat", "--local", "--workspace", str(tmp_path),
             "--db", str(tmp_path / "chat.db"), "--agent", "serve_agents:GatedAgent"],
            stdin=tty, stdout=tty, stderr=subprocess.DEVNULL, cwd=tmp_path,
            env={**os.environ, "PYTHONPATH": str(_AGENTS)})
    finally:
        os.close(tty)
    screen = b""
    terminal = trio.lowlevel.FdStream(keyboard)
    try:
        with trio.fail_after(60):
            while not screen.endswith(b"you> "):  # the first prompt
                screen += await terminal.receive_some()
            await terminal.send_all(b"hold:x\n")
            while not (b"[started]" in screen and screen.endswith(b"you> ")):
                screen += await terminal.receive_some()
            process.send_signal(signal.SIGINT)  # the turn still holds
            assert await process.wait() == 130
            screen += await _rest_of(terminal)
    finally:
        process.kill()
        await process.wait()
        await terminal.aclose()
    shown = [line.rsplit(b"\x1b[K", 1)[-1] for line in screen.split(b"\r\n")]
    assert b"  [cancelled: shutdown]" in shown, screen
    assert shown[-1] == b"", screen  # the last line printed ended, and no prompt came after it
