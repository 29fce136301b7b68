"""The lines ``tidings chat`` (``--url`` and ``--local``) reads from its standard input.

Read in a worker thread, a line the chat no longer waits for (it ended: the server refused it,
could not be reached, the reconnects gave up, or Ctrl-C) stays blocked in ``sys.stdin``'s
buffered reader, holding its lock; at interpreter exit CPython cannot take that lock and aborts
("Fatal Python error: _enter_buffered_busy", killed by SIGABRT) instead of exiting 1 or 130. So
a pipe or a socket (``producer | tidings chat``) is read by trio itself, from a duplicate of
the descriptor: the end of the chat cancels the read and nothing is left blocked. It is read
only once trio says it is readable, and never made non-blocking: that flag belongs to the open
pipe or socket, which stdout may share (one socket for both under socat, inetd or systemd
socket activation), and a non-blocking stdout lost the answers a slow peer had not read yet. A
terminal keeps ``input()`` and its line editing (read through readline, not that reader) when
stdout is one too. Any other stdin (a regular file, ``/dev/null``, ``/dev/zero``: what trio
cannot wait on) is the terminal channel's
:func:`~tidings.channels._terminal.stdin_lines`' to read: each chunk by ``os.read`` of its
descriptor in a worker thread (a read never waits there, but it may be long under way when
the chat ends: a long line of ``tidings chat < big.bin`` skipped), and a thread abandoned in
``os.read`` holds no lock, where one in the buffered reader aborted the exit the same way.

Both split their bytes into lines with :func:`~tidings.channels._lines.split_lines`: a line
longer than the chat takes (``max_line_bytes``: the server's ``max_frame_bytes``, as a frame
is at least as long as its line; a message text's cap for ``--local``) is not held whole: once
that many of its bytes are in, it is yielded as a :class:`LineTooLong`, for the chat to refuse
at once, and the rest of it is read and dropped up to its newline. ``cat bigfile.bin | tidings
chat`` keeps at most the limit and one read in memory, not the whole input; so does a regular
file (``tidings chat < big.bin``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
import sys
from collections.abc import AsyncIterator, Awaitable, Callable

import trio

from tidings.channels._lines import CHUNK, LineTooLong, split_lines, write_only
from tidings.channels._terminal import readline_reads, stdin_lines

__all__ = ["LineTooLong", "input_lines"]


async def input_lines(prompt: str = "> ", *,
                      max_line_bytes: Callable[[], Awaitable[int]] | None = None,
                      ) -> AsyncIterator[str | LineTooLong]:
    """Lines of stdin (each with its ``\\n``, undecodable bytes as lone surrogates), until
    the end of input; see the module docstring for how they are read. A closed stdin
    (``tidings chat <&-``) has no lines, as ``/dev/null``; so does one open for writing only
    (``nohup`` typed into).

    *max_line_bytes* gives the longest piped line to hold (awaited once for each line, as the
    chat knows it only once welcomed): a longer one is yielded as :class:`LineTooLong` (the
    server's ``max_frame_bytes`` is its limit) as soon as it is known to be, and the rest of it
    dropped. None: no limit on a pipe; a regular file then has
    :func:`~tidings.channels._terminal.stdin_lines`' own (a message text's cap,
    ``MAX_TEXT_BYTES``)."""
    if sys.stdin is None:
        return
    fd = _pipe_fd()
    own = None  # (a descriptor of our own: a duplicate, which the end closes)
    if fd is None or write_only(fd):  # a terminal input() reads with readline, a file
        lines = stdin_lines(prompt, max_line_bytes=max_line_bytes)
    else:  # waited on by trio: the wait on the duplicate ends with it
        own = os.dup(fd)
        lines = split_lines(functools.partial(_receive, own), sys.stdin.encoding or "utf-8",
                            max_line_bytes)
    try:
        async with contextlib.aclosing(lines):  # closed with this one, not left to gc
            async for line in lines:
                yield line
    finally:
        if own is not None:
            os.close(own)


async def _receive(fd: int) -> bytes:
    """The next bytes of *fd* (``b""`` at its end), read once it is readable: so a read in
    blocking mode (as stdin is left) returns at once, and a cancel ends the wait."""
    while True:
        await trio.lowlevel.wait_readable(fd)
        try:
            return os.read(fd, CHUNK)
        except BlockingIOError:  # made non-blocking by someone else, and nothing there
            pass


def _pipe_fd() -> int | None:
    """stdin's descriptor when it is a pipe or a socket, or a terminal that ``input()`` would
    read through ``sys.stdin``'s buffered reader (None otherwise, no stdin, or a platform
    without trio's ``FdStream``)."""
    if not hasattr(trio.lowlevel, "FdStream"):  # not a Unix (wait_readable: sockets only)
        return None
    try:
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, ValueError, OSError):  # no stdin, or a stand-in without one
        return None
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return fd
    return fd if os.isatty(fd) and not readline_reads(fd) else None
