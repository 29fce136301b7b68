"""Exit codes the ``tidings`` commands share, for a case a script must tell apart the same way
whichever command it ran.

:data:`EXIT_IN_USE`: the database is held by another process (its runtime lock: a running
``tidings serve``, a host's ``open_runtime``, a ``tidings prune``). Nothing was done; the same
command succeeds once that process has stopped. ``tidings serve``, ``tidings chat --local``
and ``tidings prune`` end so (README, "Logs, signals and exit codes").
"""

from __future__ import annotations

__all__ = ["EXIT_IN_USE"]

EXIT_IN_USE = 3
"""The exit code when another process holds the database (``DatabaseInUseError``)."""
