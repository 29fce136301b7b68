"""``tidings chat --local`` typed into on a terminal shows its prompt once. Before, a line
printed between a line read and the next ``input()`` (the turn's ``[started]``) was followed
by the prompt put back (``redraw``), and then ``input()`` printed its own: ``you> you> ``. The
prompt is now put back only while ``input()`` shows it."""

from __future__ import annotations

import os
import pathlib
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
