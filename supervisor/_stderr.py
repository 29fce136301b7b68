"""The command line's lines for stderr: said when stderr can take them, else lost.

A stderr that cannot be written (``2>/dev/full``) is no reason to end a command nor to change
its exit code: the line is lost, as nothing could tell it. Closed (``2>&-``), Python's
``sys.stderr`` is None, and ``print(file=None)`` would write the line to stdout, into the
transcript or the report a pipe reads: it is lost too.
"""

from __future__ import annotations

import contextlib
import re
from typing import TextIO

__all__ = ["one_line", "say"]

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
