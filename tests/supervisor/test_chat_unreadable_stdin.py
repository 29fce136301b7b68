"""``nohup tidings chat`` typed into a terminal: nohup "ignores input", giving the chat a stdin
it cannot read (coreutils opens ``/dev/null`` write-only there), and the README names
``nohup`` for the chat (SIGHUP ignored). Its first read failed with ``EBADF`` and the chat
ended in an ``OSError`` traceback (exit 1). An unreadable stdin now has no lines, as a closed
one (``<&-``) and ``/dev/null``: the end of input, exit 0. So has a host's ``stdin_lines``
(the terminal channel's reader), whose first read failed with ``EBADF`` too."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest
import trio

from tidings.channels._terminal import stdin_lines
from tidings.supervisor._chat_input import input_lines


def test_a_local_chat_with_a_stdin_open_for_writing_only_ends_as_at_the_end_of_input(
        tmp_path: pathlib.Path) -> None:
    with open(os.devnull, "w") as unreadable:
        result = subprocess.run(
            [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
             "--workspace", str(tmp_path), "--db", str(tmp_path / "chat.db")],
            stdin=unreadable, capture_output=True, text=True, timeout=60, cwd=tmp_path,
            check=False)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("reader", [input_lines, stdin_lines],
                         ids=["input_lines", "stdin_lines"])
@pytest.mark.parametrize("kind", ["a-file", "a-pipe"])
async def test_an_unreadable_stdin_has_no_lines(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: pathlib.Path, kind: str,
                                                reader) -> None:  # type: ignore[no-untyped-def]
    if kind == "a-file":
        fd = os.open(tmp_path / "written", os.O_WRONLY | os.O_CREAT)
    else:  # a pipe's write end for stdin (`0>&1` of a pipe)
        read_end, fd = os.pipe()
        os.close(read_end)
    with open(fd, "w", encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
        monkeypatch.setattr(sys, "stdin", stdin)
        with trio.fail_after(10):  # a guard against hanging, not a wait
            assert [line async for line in reader()] == []
