"""The processes behind :mod:`tidings.channels._orphan_guard`, run as a script (``python -I -S``,
standard library only, so no import of tidings or of the user's ``PYTHONPATH`` can slow or
break it).

``watch``: the guardian, one per host. It reads lines from stdin, a pipe only the host (and,
for a moment, a starting command) holds open: ``+PGID`` registers a command's process group,
``-PGID`` forgets it. At end of input every writer is gone, which, once the host's end closes,
means the host died (however: a SIGKILL runs no cleanup): each process group still registered
is killed with SIGKILL, then the guardian exits.

``exec GUARD STATUS CTYPE ARGV...``: the launcher of one command. It registers its own process
group (it leads a new session) on the guardian's pipe ``GUARD`` *before* the command runs, so
there is no moment in which a host killed leaves an unregistered command behind; then it closes
``GUARD`` and execs ``ARGV`` (same pid, same group). If the exec fails, its errno is written to
``STATUS`` (closed on a successful exec, so the host reads end of input there) and it exits 127.
What the interpreter changed on its way up is undone first, so the command starts as a direct
spawn would: ``SIGPIPE`` and ``SIGXFSZ`` back to their defaults, and ``LC_CTYPE`` as the host
passed it (``CTYPE``: ``-`` for unset, else ``=`` and the value), not as PEP 538 coerced it.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["launch", "main", "watch"]


def watch(stream: int = 0) -> None:
    """Keep the registered process groups until *stream* ends, then kill them (blocking)."""
    groups: set[int] = set()
    pending = b""
    while True:
        try:
            chunk = os.read(stream, 4096)
        except OSError:
            chunk = b""
        if not chunk:
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            try:
                pgid = int(line[1:])
            except ValueError:
                continue
            if line[:1] == b"+":
                groups.add(pgid)
            elif line[:1] == b"-":
                groups.discard(pgid)
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass


def launch(guard: int, status: int, ctype: str, argv: list[str]) -> int:
    """Register this process group with the guardian, then exec *argv*; returns (127) only if
    the exec failed, its errno written to *status*."""
    try:
        os.write(guard, b"+%d\n" % os.getpgrp())
    except OSError:
        pass  # the guardian is gone (or stuck): the command runs unguarded
    os.close(guard)
    os.set_inheritable(status, False)
    env = dict(os.environ)
    if ctype == "-":
        env.pop("LC_CTYPE", None)
    else:
        env["LC_CTYPE"] = ctype[1:]
    for name in ("SIGPIPE", "SIGXFSZ"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(status, str(exc.errno or 0).encode())
    return 127


def main(argv: list[str]) -> int:
    if argv[:1] == ["watch"]:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is the host's to handle
        watch()
        return 0
    if argv[:1] == ["exec"] and len(argv) >= 5:
        return launch(int(argv[1]), int(argv[2]), argv[3], argv[4:])
    sys.stderr.write(f"usage: {sys.argv[0]} watch | exec GUARD STATUS CTYPE ARGV...\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
