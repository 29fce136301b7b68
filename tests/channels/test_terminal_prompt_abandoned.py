"""A terminal read abandoned right as its prompt is printed puts no prompt back.

readline prints ``input()``'s prompt, then calls its pre-input hook, which marks the prompt
shown (what :func:`input_line` puts back after each line printed). A Ctrl-C between the two
abandoned the read (and cleared the mark) before the hook ran; the hook then marked it
shown again, and every line the runtime's stop printed after it ('[cancelled: shutdown]')
put 'you> ' back: the chat's last line was a prompt nothing would read (a flaky
``tests/supervisor/test_chat_local_prompt.py`` on a loaded machine). Here readline and
``input()`` are stand-ins that run the hook only once the read was abandoned.
"""

from __future__ import annotations

import builtins
import sys
import threading
import types
from collections.abc import Callable

import pytest
import trio

from tidings.channels import _terminal
from tidings.channels._terminal import input_line, stdin_lines


class LateHookReadline:
    """``input()`` that prints its prompt, then waits for ``go`` before calling readline's
    pre-input hook (as a reading thread the scheduler held back would), then for ``done``."""

    def __init__(self) -> None:
        self.hook: Callable[[], None] | None = None
        self.printed = threading.Event()
        self.go = threading.Event()
        self.hooked = threading.Event()
        self.done = threading.Event()

    def module(self) -> types.ModuleType:
        readline = types.ModuleType("readline")
        readline.set_pre_input_hook = self.set_hook  # type: ignore[attr-defined]
        readline.get_line_buffer = lambda: ""  # type: ignore[attr-defined]
        return readline

    def set_hook(self, hook: Callable[[], None] | None) -> None:
        self.hook = hook

    def input(self, prompt: str = "") -> str:
        self.printed.set()
        self.go.wait()
        assert self.hook is not None
        self.hook()
        self.hooked.set()
        self.done.wait()
        raise EOFError


async def test_a_hook_that_runs_after_the_read_was_abandoned_shows_no_prompt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = LateHookReadline()
    monkeypatch.setitem(sys.modules, "readline", fake.module())
    monkeypatch.setattr(builtins, "input", fake.input)
    monkeypatch.setattr(_terminal, "stdin_is_a_terminal", lambda: True)
    monkeypatch.setattr(_terminal, "_terminal_modes", lambda: (lambda: None))
    try:
        with trio.fail_after(10):  # a guard against hanging, not a wait
            async with trio.open_nursery() as nursery:
                async def read() -> None:
                    async for _line in stdin_lines("you> "):
                        pass

                nursery.start_soon(read)
                # Abandoned at the guard's cancel: a read that never prints fails, not hangs
                await trio.to_thread.run_sync(fake.printed.wait, abandon_on_cancel=True)
                nursery.cancel_scope.cancel()  # Ctrl-C: the read is abandoned
            assert input_line("you> ") == ""
            fake.go.set()  # only now does readline call its hook
            await trio.to_thread.run_sync(fake.hooked.wait, abandon_on_cancel=True)
            assert input_line("you> ") == ""  # no prompt waits: none to put back
    finally:  # no thread is left waiting, the test's own waits among them
        fake.printed.set()
        fake.hooked.set()
        fake.go.set()
        fake.done.set()
