"""Helpers shared by the store's tests."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether a process with *pid* exists (a writer child that should have been stopped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
