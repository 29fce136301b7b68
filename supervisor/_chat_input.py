"""The lines ``tidings chat --url`` reads from its standard input.

Read in a worker thread, a line the chat no longer waits for (it ended: the server refused
it, could not be reached, or the reconnects gave up) stays blocked in ``sys.stdin``'s
buffered reader, holding its lock; at interpreter exit CPython cannot take that lock and
aborts ("Fatal Python error: _enter_buffered_busy", killed by SIGABRT) instead of exiting 1.
So a pipe or a socket (``producer | tidings chat``) is read by trio itself, from a duplicate
of the descriptor: the end of the chat cancels the read and nothing is left blocked. A
terminal keeps ``input()`` and its line editing (read through readline, not that reader); a
regular file or ``/dev/null`` never blocks.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator

import trio

from tidings.channels._terminal import stdin_lines

__all__ = ["input_lines"]

_CHUNK = 65536


async def input_lines(prompt: str = "> ") -> AsyncIterator[str]:
    """Lines of stdin (each with its ``\\n``, undecodable bytes as lone surrogates), until
    the end of input; see the module docstring for how they are read. A closed stdin
    (``tidings chat <&-``) has no lines, as ``/dev/null``."""
    if sys.stdin is None:
        return
    fd = _pipe_fd()
    if fd is None:
        async for line in stdin_lines(prompt):
            yield line
        return
    encoding = sys.stdin.encoding or "utf-8"
    stream = trio.lowlevel.FdStream(os.dup(fd))  # non-blocking while read, restored on close
    try:
        # Only each new chunk is split: re-splitting the whole pending line at every read
        # made a long line quadratic (a 32 MiB line took 20 s where readline took 0.5 s).
        pending = bytearray()
        while chunk := await stream.receive_some(_CHUNK):
            *lines, rest = chunk.split(b"\n")
            for line in lines:
                pending += line
                whole = bytes(pending) + b"\n"
                pending.clear()
                yield whole.decode(encoding, "surrogateescape")
            pending += rest
        if pending:
            yield bytes(pending).decode(encoding, "surrogateescape")
    finally:
        stream.close()


def _pipe_fd() -> int | None:
    """stdin's descriptor when it is a pipe or a socket (None otherwise, no stdin, or a
    platform without trio's ``FdStream``)."""
    if not hasattr(trio.lowlevel, "FdStream"):  # not a Unix
        return None
    try:
        fd = sys.stdin.fileno()
        mode = os.fstat(fd).st_mode
    except (AttributeError, ValueError, OSError):  # no stdin, or a stand-in without one
        return None
    return fd if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) else None
