"""``tidings chat --local < big.bin`` (stdin a regular file, or any stdin the terminal channel
reads with :func:`stdin_lines`): a line longer than a message may be is refused as soon as that
is known and the rest of it skipped up to its newline, never held. Before, ``readline`` held
each line whole until its newline, however long (``tidings chat --url`` over a pipe was bounded
by b106b52; a regular file went through this reader and was not)."""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import subprocess
import sys
import tracemalloc
from collections.abc import AsyncIterator, Iterator

import pytest
import trio

from tidings.actors import MAX_TEXT_BYTES
from tidings.channels import ChannelConfig, EchoAgent
from tidings.channels._terminal import LineTooLong, TerminalChannel, stdin_lines


@contextlib.contextmanager
def _stdin_from(monkeypatch: pytest.MonkeyPatch, path: pathlib.Path) -> Iterator[None]:
    with path.open(encoding="utf-8") as stdin:  # a regular file: read through stdin_lines
        monkeypatch.setattr(sys, "stdin", stdin)
        yield


async def _limit() -> int:
    return 10


async def test_a_line_over_the_limit_is_refused_and_its_rest_skipped(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "input.txt"
    path.write_bytes(b"0123456789\n"  # exactly the limit: taken
                     b"0123456789\r\n"  # the limit and CRLF: the text is within it
                     b"0123456789a\n"  # one over
                     b"caf\xc3\xa9 \xc3\xa9t\xc3\xa9\n"  # 8 characters, 11 bytes
                     + b"y" * 100_000 + b"\n"
                     b"after\n"
                     b"0123456789")  # the limit, at the end of input
    with _stdin_from(monkeypatch, path), trio.fail_after(10):  # (a guard, not a wait)
        lines = [line async for line in stdin_lines(max_line_bytes=_limit)]
    assert lines == ["0123456789\n", "0123456789\r\n", LineTooLong(10), LineTooLong(10),
                     LineTooLong(10), "after\n", "0123456789"]


async def test_a_long_line_at_the_end_of_input_is_refused(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "input.txt"
    path.write_bytes(b"short\n" + b"z" * 100_000)
    with _stdin_from(monkeypatch, path), trio.fail_after(10):
        lines = [line async for line in stdin_lines(max_line_bytes=_limit)]
    assert lines == ["short\n", LineTooLong(10)]


async def test_the_lines_skipped_are_never_held(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "big.bin"
    with path.open("wb") as file:
        file.write(b"short\n")
        for _ in range(16):
            file.write(b"y" * (1 << 20))  # 16 MiB, one line
        file.write(b"\nafter\n")
    tracemalloc.start()
    try:
        with _stdin_from(monkeypatch, path), trio.fail_after(20):
            lines = [line async for line in stdin_lines()]  # the default: MAX_TEXT_BYTES
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == ["short\n", LineTooLong(MAX_TEXT_BYTES), "after\n"]
    assert peak < 4 << 20  # the limit (and readline's copy of it), not the 16 MiB line


def test_tidings_chat_local_refuses_a_line_over_a_message_and_goes_on(
        tmp_path: pathlib.Path) -> None:
    path = tmp_path / "big.bin"
    path.write_bytes(b"hello\n" + b"x" * (MAX_TEXT_BYTES + 1) + b"\nbye\n")
    with path.open("rb") as stdin:
        result = subprocess.run(
            [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
             "--db", str(tmp_path / "chat.db"), "--workspace", str(tmp_path)],
            stdin=stdin, capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "terminal> hello" in lines
    assert (f"! not sent: the line is over {MAX_TEXT_BYTES} bytes (MAX_TEXT_BYTES); the rest "
            "of it is skipped") in lines
    assert "terminal> bye" in lines
    assert not any("xxxx" in line for line in lines)  # neither sent nor echoed


# A line typed on a terminal is read whole by input() (readline), not by the capped readers
# above: one over MAX_TEXT_BYTES (a paste) was sent, and answered in two parts, where the same
# line piped in was refused. The channel refuses it now, as a piped one, but without the piped
# line's "the rest of it is skipped": input() read it whole, so nothing of it is skipped.
async def test_a_typed_line_over_a_message_is_refused_as_a_piped_one(rt) -> None:
    async def typed() -> AsyncIterator[str]:
        yield "hello\n"
        yield "é" * (MAX_TEXT_BYTES // 2) + "x\n"  # one byte over, in two-byte characters
        yield "é" * (MAX_TEXT_BYTES // 2) + "\r\n"  # exactly the cap, and CRLF: taken
        yield "bye\n"

    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), EchoAgent(chunk_size=1 << 20),
                              out=out)
    await channel.chat(typed(), one_at_a_time=True)
    lines = out.getvalue().splitlines()
    assert lines.count(f"! not sent: the line is over {MAX_TEXT_BYTES} bytes "
                       "(MAX_TEXT_BYTES)") == 1
    assert not any("skipped" in line for line in lines)
    assert "terminal> hello" in lines
    assert "terminal> bye" in lines
    assert f"terminal> {'é' * (MAX_TEXT_BYTES // 2)}" in lines
    assert not any("x" in line for line in lines if line.startswith("terminal> é"))
    assert lines.count("  [completed]") == 3


async def test_a_piped_line_over_the_limit_is_refused_before_its_newline_comes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # As tidings chat's own reader (input_lines) refuses it, and as the README says ("dropped
    # as soon as that many of its bytes are read"): stdin_lines read on to the newline first,
    # so a producer that wrote a long line and waited saw no refusal until it sent more.
    read_end, write_end = os.pipe()
    writer = trio.lowlevel.FdStream(write_end)
    lines: list[str | LineTooLong] = []
    refused = trio.Event()
    with open(read_end, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read from here
        monkeypatch.setattr(sys, "stdin", stdin)

        async def read_input() -> None:
            async for line in stdin_lines(max_line_bytes=_limit):
                lines.append(line)
                refused.set()

        with trio.fail_after(10):  # a guard against hanging, not a wait
            async with trio.open_nursery() as nursery, writer:
                nursery.start_soon(read_input)
                await writer.send_all(b"x" * 20)  # no newline yet
                await refused.wait()
                assert lines == [LineTooLong(10)]
                await writer.send_all(b"x" * 20 + b"\nafter\n")
    assert lines == [LineTooLong(10), "after\n"]
