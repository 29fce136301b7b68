"""A turn's command dies with its host, even one killed with SIGKILL (which runs no cleanup).

One guardian process per host (``_orphan_guard_child.py watch``, its own session, so a
terminal's signals are not its) reads a pipe whose write end only the host holds. Each command
starts through a launcher (``... exec``, run with the host's environment and handed the
command's on a pipe) that registers the command's process group on that pipe and then execs
the command in place (same pid and group); the host forgets the group just
before it reaps the command. When the host dies, however, the pipe ends and the guardian kills
every group still registered.

Why not ``PR_SET_PDEATHSIG``, as the store's writer child: it fires when the *thread* that
forked the child exits, and trio spawns from its thread cache, whose threads exit when idle,
so it would kill healthy commands; it is Linux only, and it kills the command, not its group.

The guard is used where the command's exit can be awaited without reaping it (``waitid`` with
``WNOWAIT``), so the group is forgotten while its id is still the command's, and where
``posix_spawn`` starts the guardian, with a Python interpreter to run it (not a frozen app);
elsewhere :data:`GUARDED` is False and commands start directly, unguarded, as before.
"""

from __future__ import annotations

import logging
import os
import pathlib
import signal
import sys
import threading

import trio

__all__ = ["GUARDED", "Launch", "forget", "prepare"]

_LOG = logging.getLogger("tidings.channels.agent")
_CHILD = str(pathlib.Path(__file__).with_name("_orphan_guard_child.py"))
GUARDED = (os.name == "posix" and hasattr(os, "waitid") and hasattr(os, "WNOWAIT")
           and hasattr(os, "posix_spawn") and bool(sys.executable)
           and not getattr(sys, "frozen", False))  # a frozen app's executable is no python
"""Whether commands start guarded here (see the module's docstring)."""

_lock = threading.Lock()
_pid = 0  # the guardian (our child), 0 before the first command
_fd = -1  # the write end of its pipe: non-blocking, not inherited


def _after_fork_in_child() -> None:
    """A forked copy of the host (no exec) must not keep the guardian's pipe open: the pipe
    would outlive the host, and the guardian would never see it die."""
    global _lock, _pid, _fd
    if _fd >= 0:
        os.close(_fd)
    _lock, _pid, _fd = threading.Lock(), 0, -1


if GUARDED:
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _guardian_alive() -> bool:
    if not _pid:
        return False
    try:
        pid, _ = os.waitpid(_pid, os.WNOHANG)
    except ChildProcessError:
        return False
    return pid == 0


def _spawn_guardian(read: int) -> int:
    """Start the guardian on the pipe end *read*, in its own session where it can be."""
    argv = [sys.executable, "-I", "-S", _CHILD, "watch"]
    actions = [(os.POSIX_SPAWN_DUP2, read, 0),
               (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
               (os.POSIX_SPAWN_DUP2, 1, 2)]
    try:
        return os.posix_spawn(sys.executable, argv, os.environ, file_actions=actions,
                              setsid=True)
    except NotImplementedError:  # no POSIX_SPAWN_SETSID: it ignores ^C all the same
        return os.posix_spawn(sys.executable, argv, os.environ, file_actions=actions)


def _guardian_fd() -> int:
    """A new descriptor of the guardian's pipe, for one launcher; the guardian is started (or
    restarted, if it died) first. Blocking: it may spawn a process."""
    global _pid, _fd
    with _lock:
        if not _guardian_alive():
            if _pid:
                _LOG.warning("event=orphan_guard_restarted pid=%d: commands started before "
                             "run unguarded", _pid)
                os.close(_fd)
                _pid, _fd = 0, -1
            read, write = os.pipe()
            try:
                _pid = _spawn_guardian(read)
            except BaseException:
                os.close(write)
                raise
            finally:
                os.close(read)
            os.set_blocking(write, False)
            _fd = write
        return os.dup(_fd)


def forget(pgid: int) -> None:
    """Tell the guardian the process group *pgid* is no longer ours to kill.

    Called before the command is reaped, so that no group id it might be given again is
    killed when the host dies. A guardian that cannot take it (gone, or its pipe full: it is
    stuck) is killed instead, and the next command starts a new one."""
    with _lock:
        if _fd < 0:
            return
        try:
            os.write(_fd, b"-%d\n" % pgid)
        except BlockingIOError:
            _LOG.warning("event=orphan_guard_stuck pid=%d: killed", _pid)
            try:
                os.kill(_pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        except OSError:
            pass  # gone: it kills nothing


class Launch:
    """The argv and descriptors of one guarded start: :meth:`spawned` once the launcher was
    spawned, then :meth:`exec_error`; :meth:`close` in any case.

    The launcher is spawned with the host's environment (``env=None``), where this
    interpreter is known to start, and is handed the command's *env* on a pipe: started in
    the command's, it failed (exit 127) in one the interpreter cannot start in (an
    ``LD_LIBRARY_PATH`` with another library of its libpython's name) where a direct spawn
    worked. It reads the command's environment to its end, then execs the command with it."""

    def __init__(self, argv: list[str], env: dict[str, str], guard: int) -> None:
        self._guard = guard
        self._env = _encoded(env)
        self._status, status_write = os.pipe()
        try:
            self._env_read, self._env_write = os.pipe()
        except BaseException:
            os.close(self._status)
            os.close(status_write)
            raise
        self._status_write: int | None = status_write
        self.argv = [sys.executable, "-I", "-S", _CHILD, "exec", str(guard),
                     str(status_write), str(self._env_read), *argv]
        self.pass_fds = (guard, status_write, self._env_read)

    def spawned(self) -> None:
        """Drop the host's copies of what the launcher was handed: the status pipe then ends
        when the launcher's copy closes (at its exec, or its exit)."""
        if self._status_write is not None:
            os.close(self._guard)
            os.close(self._status_write)
            os.close(self._env_read)
            self._status_write = None

    async def exec_error(self) -> OSError | None:
        """Hand the launcher the command's environment, then wait until it has exec'd the
        command (None) or failed to (its error).

        Also None if the launcher died before either (killed, or its interpreter failed):
        the caller sees that as the command's exit."""
        self.spawned()
        fd, self._env_write = self._env_write, -1
        async with trio.lowlevel.FdStream(fd) as stream:
            try:
                await stream.send_all(self._env)
            except trio.BrokenResourceError:
                pass  # the launcher died: its exit is the command's, read below
        fd, self._status = self._status, -1
        data = b""
        async with trio.lowlevel.FdStream(fd) as stream:
            while chunk := await stream.receive_some():
                data += chunk
        if not data:
            return None
        code = int(data)
        return OSError(code, os.strerror(code))

    def close(self) -> None:
        """Close what is left open (idempotent)."""
        self.spawned()
        if self._status >= 0:
            os.close(self._status)
            self._status = -1
        if self._env_write >= 0:
            os.close(self._env_write)
            self._env_write = -1


def _encoded(env: dict[str, str]) -> bytes:
    """*env* as the launcher reads it: ``NAME=VALUE`` entries, each ended by a NUL (which
    neither can hold), encoded as :mod:`subprocess` encodes an ``env`` (``os.fsencode``)."""
    return b"".join(os.fsencode(name) + b"=" + os.fsencode(value) + b"\0"
                    for name, value in env.items())


async def prepare(argv: list[str], env: dict[str, str]) -> Launch | None:
    """How to start *argv* (with *env*) guarded: its launcher's argv and descriptors, the
    guardian started first if need be. None where commands start unguarded: not
    :data:`GUARDED` here, or the guardian cannot be started (logged)."""
    if not GUARDED:
        return None
    try:
        guard = await trio.to_thread.run_sync(_guardian_fd)
    except OSError as exc:
        _LOG.warning("event=orphan_guard_unavailable error=%r: the command runs unguarded",
                     str(exc))
        return None
    try:
        return Launch(argv, env, guard)
    except BaseException:
        os.close(guard)
        raise
