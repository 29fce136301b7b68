"""A host's ``stdin_lines`` with a stdin open for writing only (``nohup``'s, typed into: its
input "ignored") has no lines, as ``tidings chat`` (``input_lines``) has none. Before, the
first read failed with ``EBADF``: an ``OSError`` out of the host's loop."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest
import trio

from tidings.channels._terminal import stdin_lines


@pytest.mark.parametrize("kind", ["a-file", "a-pipe"])
async def test_an_unreadable_stdin_has_no_lines(monkeypatch: pytest.MonkeyPatch,
                                                tmp_path: pathlib.Path, kind: str) -> None:
    if kind == "a-file":
        fd = os.open(tmp_path / "written", os.O_WRONLY | os.O_CREAT)
    else:  # a pipe's write end for stdin
        read_end, fd = os.pipe()
        os.close(read_end)
    with open(fd, "w", encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
        monkeypatch.setattr(sys, "stdin", stdin)
        with trio.fail_after(10):  # a guard against hanging, not a wait
            assert [line async for line in stdin_lines()] == []
