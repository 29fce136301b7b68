"""Lines of a byte stream (stdin that is not typed into through readline), capped as read.

One splitter for both of tidings' stdin readers: ``tidings chat``'s
:func:`~tidings.supervisor._chat_input.input_lines` (a pipe or a socket, which trio waits on)
and the terminal channel's :func:`~tidings.channels._terminal.stdin_lines` (a file, or a pipe
read in a worker thread): each written once, they refused different lines (one asked the
limit only of a line longer than one read, the other refused only once it had skipped to the
newline) and one of them crashed on a stdin open for writing only.

A line longer than *max_line_bytes* is not held whole: once that many of its bytes are in
(its ``\\r\\n`` not counted), it is yielded as a :class:`LineTooLong`, for the chat to refuse
at once, and the rest of it is read and dropped up to its newline: at most the limit and one
read are held, however long the line.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable

import attrs
import trio

from tidings.actors import MAX_TEXT_BYTES

__all__ = ["CHUNK", "LineTooLong", "message_cap", "read_in_thread", "split_lines", "write_only"]

CHUNK = 65536
"""Bytes read at a time."""


@attrs.frozen
class LineTooLong:
    """A line of input refused as it was read: more than *limit* bytes before its newline (a
    ``\\r\\n`` not counted). Its bytes are skipped up to that newline, never held whole
    (*skipped* False: a typed line, which ``input()`` read whole, so none were)."""

    limit: int
    skipped: bool = True


async def split_lines(receive: Callable[[], Awaitable[bytes]], encoding: str,
                      max_line_bytes: Callable[[], Awaitable[int]] | None,
                      ) -> AsyncIterator[str | LineTooLong]:
    """The lines of the chunks *receive* returns until ``b""`` (each with its ``\\n``; the
    last one without, if the input ends without), decoded from *encoding* with undecodable
    bytes as lone surrogates (for the chat to refuse that line; a strict decoder would raise
    and lose the lines read with it); a line over *max_line_bytes* (awaited once for each line
    that is not empty; None: no limit) as :class:`LineTooLong`, its rest dropped."""
    # Only each new chunk is split: re-splitting the whole pending line at every read
    # made a long line quadratic (a 32 MiB line took 20 s where readline took 0.5 s).
    pending = bytearray()
    limit = _Limit(max_line_bytes)
    dropping = False  # in a line refused as too long: its bytes up to the newline go
    while chunk := await receive():
        *lines, rest = chunk.split(b"\n")
        for line in lines:
            if dropping:  # the refused line's last bytes
                dropping = False
                continue
            pending += line
            over = await limit.over(pending)
            whole = bytes(pending) + b"\n"
            pending.clear()
            limit.next_line()
            yield whole.decode(encoding, "surrogateescape") if over is None else LineTooLong(over)
        if dropping:
            continue
        pending += rest
        over = await limit.over(pending)
        if over is not None:
            pending.clear()
            limit.next_line()
            dropping = True
            yield LineTooLong(over)
    if pending:
        yield bytes(pending).decode(encoding, "surrogateescape")


class _Limit:
    """*max_line_bytes*, asked once for each line (a chat's may change between lines: a
    reconnect's ``welcome``), when it has bytes to weigh."""

    __slots__ = ("_ask", "_limit")

    def __init__(self, ask: Callable[[], Awaitable[int]] | None) -> None:
        self._ask = ask
        self._limit: int | None = None

    async def over(self, line: bytearray) -> int | None:
        """The limit *line* (without its newline, whole or the start of it) is over, a
        ``\\r`` at its end not counted (a CRLF's, or the start of one); None when within."""
        if self._ask is None or not line:
            return None
        if self._limit is None:
            self._limit = await self._ask()
        return self._limit if len(line) - line.endswith(b"\r") > self._limit else None

    def next_line(self) -> None:
        """The line ended: the next one asks the limit again."""
        self._limit = None


async def message_cap() -> int:
    """A message text's cap, ``MAX_TEXT_BYTES``, as a *max_line_bytes*: the longest line
    ``tidings chat --local`` reads, and a file's lines are held to by default."""
    await trio.lowlevel.checkpoint()
    return MAX_TEXT_BYTES


async def read_in_thread(fd: int) -> bytes:
    """The next bytes of *fd* (``b""`` at its end), read by ``os.read`` in a worker thread
    that a cancel abandons: not through ``sys.stdin``'s buffered reader, whose lock a thread
    abandoned in it kept, so that CPython aborted at exit ("Fatal Python error:
    _enter_buffered_busy", SIGABRT).

    The thread reads a duplicate of *fd*, its own until it returns: abandoned, it reads on
    after the host may have closed stdin, and the descriptor's number, reused by the next
    file the host opened, had it read (and drop) that file's bytes."""
    return await trio.to_thread.run_sync(_read_own, fd, abandon_on_cancel=True)


def _read_own(fd: int) -> bytes:
    own = os.dup(fd)
    try:
        return os.read(own, CHUNK)
    finally:
        os.close(own)


def write_only(fd: int) -> bool:
    """Whether *fd* is open for writing only: ``nohup`` typed into gives that for stdin
    (``/dev/null``, "ignoring input"), and its first read failed with ``EBADF``, a
    traceback. It has no lines, as a closed stdin. False where that cannot be known (no
    ``fcntl``: not a Unix)."""
    try:
        import fcntl
    except ImportError:
        return False
    try:
        flags = fcntl.fcntl(fd, fcntl.F_GETFL)
    except OSError:
        return False
    return flags & os.O_ACCMODE == os.O_WRONLY
