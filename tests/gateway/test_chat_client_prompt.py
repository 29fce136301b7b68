"""``tidings chat --url`` typed into on a terminal shows its ``> `` prompt only once it is
welcomed. Before, it read the terminal from the start: ``input()`` printed ``> `` while the
chat connected, so the banner came after it (``> tidings chat: ws://...``), and a server it
could not reach left ``> `` after ``cannot connect`` as it exited."""

from __future__ import annotations

import os
import pathlib
import socket
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest
import trio

pytestmark = pytest.mark.skipif(not hasattr(os, "openpty"), reason="a pseudo-terminal")


@asynccontextmanager
async def _on_a_terminal(url: str, tmp_path: pathlib.Path, conversation: str = "prompt"
                         ) -> AsyncIterator[tuple[trio.Process, trio.lowlevel.FdStream]]:
    """The chat at *url* with a terminal for stdin, stdout and stderr, and the terminal's
    other end (what it shows is read there, what is typed written there); killed after."""
    keyboard, tty = os.openpty()
    try:
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--token",
             "gateway-test-token", "--url", url, "--conversation", conversation],
            stdin=tty, stdout=tty, stderr=tty, cwd=tmp_path)
    finally:
        os.close(tty)
    terminal = trio.lowlevel.FdStream(keyboard)
    try:
        yield process, terminal
    finally:
        process.kill()
        await process.wait()
        await terminal.aclose()


async def _screen(url: str, tmp_path: pathlib.Path, *,
                  until: Callable[[bytes], bool] | None) -> bytes:
    """What the chat at *url* shows on a terminal (stdin, stdout and stderr), until *until*
    says it is enough (None: until it exits)."""
    screen = b""
    async with _on_a_terminal(url, tmp_path) as (process, terminal):
        with trio.fail_after(60):
            while until is None or not until(screen):
                try:
                    chunk = await terminal.receive_some()
                except trio.BrokenResourceError:  # EIO: the terminal's last user exited
                    chunk = b""
                if not chunk:
                    break
                screen += chunk
            if until is None:
                assert await process.wait() == 1, screen
    return screen


async def test_no_prompt_after_cannot_connect(tmp_path: pathlib.Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    screen = await _screen(f"ws://127.0.0.1:{port}", tmp_path, until=None)
    assert screen.startswith(f"tidings chat: cannot connect to ws://127.0.0.1:{port}: ".encode())
    assert screen.endswith(b" failed\r\n"), screen  # and no "> " after it


async def test_the_prompt_comes_after_the_banner(rt, serve_gateway,
                                                 tmp_path: pathlib.Path) -> None:
    def said(screen: bytes) -> bool:  # the banner, and the prompt after it if that came first
        return b"quits." in screen and (screen.startswith(b"> ") or screen.endswith(b"> "))

    async with serve_gateway(rt) as (_gateway, url):
        screen = await _screen(url, tmp_path, until=said)
    assert screen == (f"tidings chat: {url}, conversation prompt; /help for commands; end of "
                      "input (Ctrl-D) quits.\r\n> ").encode(), screen


def _lines(screen: bytes) -> list[str]:
    """The screen's lines as a terminal leaves them: ``\\r\\x1b[K`` clears the line so far."""
    shown = []
    for raw in screen.decode().split("\r\n"):
        shown.append(raw.rsplit("\r\x1b[K", 1)[-1])
    return shown


async def test_a_reply_is_printed_on_its_own_line_and_the_prompt_put_back(
        rt, serve_gateway, tmp_path: pathlib.Path) -> None:
    # A reply that came while "> " waited for the next line was printed after it: "> hello",
    # as if typed, and the prompt was gone until the next line. The terminal chat clears the
    # prompt, prints the line and puts the prompt (and what was typed) back, as --local does.
    screen = b""
    async with serve_gateway(rt) as (_gateway, url), \
            _on_a_terminal(url, tmp_path, "redraw") as (_process, terminal):
        with trio.fail_after(60):
            while not screen.endswith(b"quits.\r\n> "):
                screen += await terminal.receive_some()
            await terminal.send_all(b"hello\r")
            while sum("hello" in line for line in _lines(screen)) < 2:  # typed, replied
                screen += await terminal.receive_some()
            while b"\r\x1b[K" in screen and not screen.endswith(b"> "):  # put back
                screen += await terminal.receive_some()
    lines = _lines(screen)
    assert lines.count("> hello") == 1, screen  # the typed line, echoed
    assert lines.count("hello") == 1, screen  # the reply, on a line of its own
    assert lines[-1] == "> ", screen
