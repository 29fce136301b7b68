"""The command line's lines for stderr: said when stderr can take them, else lost.

A stderr that cannot be written (``2>/dev/full``) is no reason to end a command nor to change
its exit code: the line is lost, as nothing could tell it. Closed (``2>&-``), Python's
``sys.stderr`` is None, and ``print(file=None)`` would write the line to stdout, into the
transcript or the report a pipe reads: it is lost too.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import TextIO

__all__ = ["one_line", "say", "stdout_lost"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def one_line(text: str) -> str:
    """*text* with its control characters (C0, DEL, C1) escaped, ``\\x0a`` for a newline,
    ``\\x1b`` for ESC: a refusal's path or reason (a file name may hold any of them) printed
    as one line, not broken in two, and no escape sequence acted on by the terminal. And a
    byte of a path that does not decode (``os.fsdecode`` holds it as a lone surrogate) as
    ``\\udcff``: left to the stream, the line was that only on Python's own stderr; one a host
    opened (``open(log, "w")``) raised ``UnicodeEncodeError`` instead of saying it, and one
    that writes surrogates back wrote the raw byte, which is no UTF-8."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # (lone surrogates only)
    return _CONTROL.sub(lambda match: f"\\x{ord(match.group()):02x}", text)


def say(err: TextIO | None, text: str) -> None:
    """*text* as a line on *err* (stderr), flushed; lost when *err* is None or cannot be
    written (see the module docstring). Never raises ``OSError``: one out of the chat's
    connection would be taken for a connection that failed (its banner is written there)."""
    if err is None:
        return
    with contextlib.suppress(OSError):
        print(text, file=err, flush=True)


def stdout_lost(command: str, error: BaseException, *, said: bool = True,
                stream: TextIO | None = None, drop: bool = True) -> int:
    """A command's stdout failed with *error*: say so on stderr as ``<command>: cannot write
    to stdout: <error>`` (nothing when *said* is False or *error* is a ``BrokenPipeError``:
    the reader left, ``| head``), put ``/dev/null`` on its descriptor (*stream*'s, else
    ``sys.stdout``'s, if any; not when *drop* is False) so that what it still buffers does
    not fail again at the interpreter's exit (an ``Exception ignored`` message, exit 120),
    and return 1, the exit code of a stdout that cannot be written."""
    if said and not isinstance(error, BrokenPipeError):
        say(sys.stderr, f"{command}: cannot write to stdout: {error}")
    stream = sys.stdout if stream is None else stream
    if drop and stream is not None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
    return 1
