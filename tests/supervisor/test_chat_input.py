"""``tidings chat --url`` input (:func:`input_lines`): a closed stdin and a pipe carrying a
very long line."""

from __future__ import annotations

import os
import sys

import pytest
import trio

from tidings.supervisor._chat_input import input_lines


async def test_a_closed_stdin_is_the_end_of_input(monkeypatch: pytest.MonkeyPatch) -> None:
    # ``tidings chat <&-``: Python sets sys.stdin to None; the chat ended with a traceback
    # (AttributeError from the line reader) instead of as at the end of input.
    monkeypatch.setattr(sys, "stdin", None)
    with trio.fail_after(10):  # a guard against hanging, not a wait
        assert [line async for line in input_lines()] == []


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_SETPIPE_SZ"),
                    reason="sizes the pipe (Linux)")
async def test_a_very_long_line_is_read_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    # Each read appended to the whole pending line and split it again: a 16 MiB line coming
    # 4 KiB a read took minutes (quadratic), where the thread reader took a fraction of a second.
    import fcntl

    read_end, write_end = os.pipe()
    fcntl.fcntl(read_end, fcntl.F_SETPIPE_SZ, 4096)  # so each read gives at most 4 KiB
    size = 16 << 20
    writer = trio.lowlevel.FdStream(write_end)

    async def write() -> None:
        async with writer:
            await writer.send_all(b"first\n" + b"x" * size + b"\nlast")

    with open(read_end, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
        monkeypatch.setattr(sys, "stdin", stdin)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write)
            with trio.fail_after(10):  # linear: well under a second
                lines = [line async for line in input_lines()]
    assert [len(line) for line in lines] == [6, size + 1, 4]
    assert lines[0] == "first\n"
    assert lines[2] == "last"
    assert lines[1] == "x" * size + "\n"
