"""Whether the process that claimed ``sending`` rows still runs, as far as this host can tell.

After a crash ``tidings status`` reads the dead process's rows as ``sending`` until the next
start registers another process (a read cannot probe the runtime lock: that can make a server
starting meanwhile fail). The process is recorded (pid, host, start time), so when its host is
this one, ``os.kill(pid, 0)`` tells whether a process of that pid exists: ``ProcessLookupError``
none, ``PermissionError`` one of another user. A pid is reused once its process is gone, so on
Linux the start time of the process now holding it is read from ``/proc`` too: one that started
after the claimant registered is another process. Elsewhere (no ``/proc``) that is not checked,
and on Windows ``os.kill`` would end the process: it is not called there at all.
"""

from __future__ import annotations

import os
import socket
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from tidings.store import ProcessEpoch

__all__ = ["ELSEWHERE", "GONE", "REUSED", "RUNNING", "UNKNOWN", "ProcessState", "process_state"]

RUNNING = "running"
GONE = "gone"
REUSED = "reused"
"""Its pid is held by a process that started after it registered: another one."""
ELSEWHERE = "elsewhere"
"""It registered on another host: this one cannot look."""
UNKNOWN = "unknown"
"""This host cannot tell (no POSIX ``kill``, or a pid no process can have)."""

_MAX_PID = 2**22
"""The largest pid Linux hands out (``pid_max`` is at most 2**22); BSDs and macOS stay below.
A row with another (0, negative, larger) is no process ``kill`` may be asked about: 0 and -1
name process groups."""

_START_SLACK = 5.0
"""Seconds a process may seem to have started after it registered: ``/proc/stat``'s boot time
is whole seconds, and the wall clock may have been corrected a little since."""


@attrs.frozen
class ProcessState:
    """What this host can tell of a registered process: one of :data:`RUNNING`, :data:`GONE`,
    :data:`REUSED` (``started``: the start of the process holding the pid now),
    :data:`ELSEWHERE` or :data:`UNKNOWN`."""

    kind: str
    started: float | None = None

    @property
    def running(self) -> bool | None:
        """True or False when this host can tell, else None (``--json``'s ``running``)."""
        return {RUNNING: True, GONE: False, REUSED: False}.get(self.kind)


def process_state(process: ProcessEpoch) -> ProcessState:
    """Whether *process* still runs, checked here only when it registered on this host."""
    if process.hostname != socket.gethostname():
        return ProcessState(ELSEWHERE)
    if os.name != "posix" or not 0 < process.pid <= _MAX_PID:
        return ProcessState(UNKNOWN)
    try:
        os.kill(process.pid, 0)  # signal 0: only whether it could be sent
    except ProcessLookupError:
        return ProcessState(GONE)
    except PermissionError:
        pass  # a process of another user has that pid
    except OSError:
        return ProcessState(UNKNOWN)
    started, zombie = _proc_start(process.pid)
    if zombie:  # exited, not yet reaped by its parent: it runs no more
        return ProcessState(GONE)
    if started is not None and started > process.started_at + _START_SLACK:
        return ProcessState(REUSED, started)
    return ProcessState(RUNNING)


def _proc_start(pid: int) -> tuple[float | None, bool]:
    """The unix start time of process *pid* (None if unreadable: no ``/proc``, or it ended
    meanwhile) and whether it is a zombie, from ``/proc/PID/stat`` and ``/proc/stat``."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
        with open("/proc/stat", "rb") as file:
            boot = next((line for line in file if line.startswith(b"btime ")), None)
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None, False
    fields = stat[stat.rfind(b")") + 2:].split()  # (its name, in parentheses, may hold spaces)
    try:
        zombie = fields[0] == b"Z"
        # field 22 of the line, the 20th after the name: clock ticks since boot
        return int(boot.split()[1]) + int(fields[19]) / ticks, zombie  # type: ignore[union-attr]
    except (AttributeError, IndexError, ValueError, ZeroDivisionError):
        return None, False
