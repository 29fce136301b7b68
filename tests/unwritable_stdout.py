"""A stdout ``tidings chat`` cannot write, and the ending the README promises for it: exit 1,
one line on stderr (none for a reader that left), never a traceback, never a reconnect
(stdout will not come back). Shared by the chat's output-failure tests."""

from __future__ import annotations

import os

import pytest

__all__ = ["KINDS", "assert_one_line_ending", "open_unwritable"]

KINDS = ("full", "closed")
"""``full``: ``> /dev/full`` (ENOSPC); ``closed``: a pipe whose reader left (EPIPE)."""


def open_unwritable(kind: str) -> int:
    """A file descriptor of *kind* (see :data:`KINDS`) for the chat's stdout; the caller
    closes it. Skips the test where there is no ``/dev/full``."""
    if kind == "full":
        try:
            return os.open("/dev/full", os.O_WRONLY)
        except FileNotFoundError:
            pytest.skip("no /dev/full")
    reader, target = os.pipe()
    os.close(reader)
    return target


def assert_one_line_ending(kind: str, returncode: int, stderr: str) -> None:
    """The chat ended as the README says for a stdout of *kind* it could not write."""
    assert returncode == 1, stderr
    assert "Traceback" not in stderr
    assert "Exception ignored" not in stderr
    assert "reconnect" not in stderr
    if kind == "full":
        assert stderr.splitlines()[-1] == (
            "tidings chat: cannot write to stdout: [Errno 28] No space left on device"), stderr
    else:  # the reader left: nothing to say (the banner only)
        assert len(stderr.splitlines()) == 1, stderr
        assert "cannot write" not in stderr
