"""``tidings chat --local`` typed into on a terminal shows its prompt once. Before, a line
printed between a line read and the next ``input()`` (the turn's ``[started]``) was followed
by the prompt put back (``redraw``), and then ``input()`` printed its own: ``you> you> ``. The
prompt is now put back only while ``input()`` shows it."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
import trio


@contextlib.asynccontextmanager
async def _chat_on_a_terminal(argv: list[str], cwd: pathlib.Path, env: dict[str, str] | None = None
                              ) -> AsyncIterator[tuple[trio.Process, trio.lowlevel.FdStream]]:
    """``tidings chat`` (*argv*) run on a pseudo-terminal: yields its process and the
    terminal's keyboard end (what is typed goes in, what the chat shows comes out); the
    process is killed and the terminal closed after."""
    keyboard, tty = os.openpty()
    try:
        process = await trio.lowlevel.open_process(argv, stdin=tty, stdout=tty,
                                                   stderr=subprocess.DEVNULL, cwd=cwd, env=env)
    finally:
        os.close(tty)
    terminal = trio.lowlevel.FdStream(keyboard)
    try:
        yield process, terminal
    finally:
        process.kill()
        with trio.CancelScope(shield=True):  # killed: a short wait
            await process.wait()
            await terminal.aclose()


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="a pseudo-terminal")
async def test_the_prompt_is_shown_once_after_each_line(tmp_path: pathlib.Path) -> None:
    screen = b""
    async with _chat_on_a_terminal(
            [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
             "--workspace", str(tmp_path), "--db", str(tmp_path / "chat.db")],
            tmp_path) as (_process, terminal):
        with trio.fail_after(60):
            while not screen.endswith(b"you> "):  # the first prompt
                screen += await terminal.receive_some()
            await terminal.send_all(b"hello\n")
            # Everything said: the reply, the turn's end, and a prompt after them.
            while not (b"terminal> hello" in screen and b"[completed]" in screen
                       and screen.endswith(b"you> ")):
                screen += await terminal.receive_some()
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
    screen = b""
    async with _chat_on_a_terminal(
            [sys.executable, "-c", _CHAT, "chat", "--local", "--workspace", str(tmp_path),
             "--db", str(tmp_path / "chat.db"), "--agent", "serve_agents:GatedAgent"],
            tmp_path, env={**os.environ, "PYTHONPATH": str(_AGENTS)}) as (process, terminal):
        with trio.fail_after(60):
            while not screen.endswith(b"you> "):  # the first prompt
                screen += await terminal.receive_some()
            await terminal.send_all(b"hold:x\n")
            while not (b"[started]" in screen and screen.endswith(b"you> ")):
                screen += await terminal.receive_some()
            process.send_signal(signal.SIGINT)  # the turn still holds
            assert await process.wait() == 130
            screen += await _rest_of(terminal)
    shown = [line.rsplit(b"\x1b[K", 1)[-1] for line in screen.split(b"\r\n")]
    assert b"  [cancelled: shutdown]" in shown, screen
    assert shown[-1] == b"", screen  # the last line printed ended, and no prompt came after it
