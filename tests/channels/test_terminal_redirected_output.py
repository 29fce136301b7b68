"""A host's ``stdin_lines`` on a terminal whose output goes elsewhere (``host >
transcript.txt``, typed into) reads it as ``tidings chat`` (``input_lines``) does: no prompt
into the transcript, and not through ``sys.stdin``'s buffered reader. Before, it called
``input()``, which without readline (stdout not the terminal) wrote ``you> `` to stdout before
each line and read the buffered reader, whose lock a cancelled read kept (CPython aborts at
exit on it: the SIGABRT that ``tidings chat`` reads such a terminal by trio to avoid)."""

from __future__ import annotations

import io
import os
import sys

import pytest
import trio

from tidings.channels._terminal import stdin_lines


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="a pseudo-terminal")
async def test_a_terminal_typed_into_with_stdout_redirected_gets_no_prompt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    keyboard, tty = os.openpty()
    transcript = io.StringIO()
    try:
        with open(tty, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
            monkeypatch.setattr(sys, "stdin", stdin)
            monkeypatch.setattr(sys, "stdout", transcript)
            os.write(keyboard, b"hello\n")
            with trio.fail_after(10):  # a guard against hanging, not a wait
                lines = stdin_lines("you> ")
                first = await lines.__anext__()
                await lines.aclose()
    finally:
        os.close(keyboard)
    assert transcript.getvalue() == ""  # was "you> "
    assert first == "hello\n"
