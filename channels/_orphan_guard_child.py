"""The processes behind :mod:`tidings.channels._orphan_guard`, run as a script (``python -I -S``,
standard library only, so no import of tidings or of the user's ``PYTHONPATH`` can slow or
break it).

``watch``: the guardian, one per host. It reads lines from stdin, a pipe only the host (and,
for a moment, a starting command) holds open: ``+PGID`` registers a command's process group,
``-PGID`` forgets it. At end of input every writer is gone, which, once the host's end closes,
means the host died (however: a SIGKILL runs no cleanup): each process group still registered
is killed with SIGKILL, then the guardian exits.

``exec GUARD STATUS ENV ARGV...``: the launcher of one command. It registers its own process
group (it leads a new session) on the guardian's pipe ``GUARD`` *before* the command runs, so
there is no moment in which a host killed leaves an unregistered command behind; then it closes
``GUARD``, reads the command's environment from the pipe ``ENV`` to its end (``NAME=VALUE``
entries, each ended by a NUL) and execs ``ARGV`` with it (same pid, same group). It runs in the
host's environment, where this interpreter starts: the command's may be one it cannot start in
(an ``LD_LIBRARY_PATH`` with another library of its libpython's name), and is not the one PEP
538 coerced (``LC_CTYPE`` set in a C locale) either. If the exec fails, its errno is written to
``STATUS`` (closed on a successful exec, so the host reads end of input there) and it exits 127.
What else the interpreter changed on its way up is undone first, so the command starts as a
direct spawn would: ``SIGPIPE`` and ``SIGXFSZ`` back to their defaults.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["launch", "main", "read_env", "watch"]


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


def read_env(stream: int) -> dict[bytes, bytes]:
    """The environment the host writes to *stream* (then closed): ``NAME=VALUE`` entries,
    each ended by a NUL. Blocking."""
    data = b""
    while chunk := os.read(stream, 65536):
        data += chunk
    os.close(stream)
    env = {}
    for entry in data.split(b"\0")[:-1]:
        name, _, value = entry.partition(b"=")
        env[name] = value
    return env


def launch(guard: int, status: int, env_stream: int, argv: list[str]) -> int:
    """Register this process group with the guardian, then exec *argv* with the environment
    read from *env_stream*; returns (127) only if the exec failed, its errno written to
    *status*."""
    try:
        os.write(guard, b"+%d\n" % os.getpgrp())
    except OSError:
        pass  # the guardian is gone (or stuck): the command runs unguarded
    os.close(guard)
    os.set_inheritable(status, False)
    env = read_env(env_stream)
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
        return launch(int(argv[1]), int(argv[2]), int(argv[3]), argv[4:])
    sys.stderr.write(f"usage: {sys.argv[0]} watch | exec GUARD STATUS ENV ARGV...\n")
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
