""":class:`CommandAgent`: a real agent behind a command, one process per turn."""

from __future__ import annotations

import codecs
import functools
import math
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from typing import final

import trio

from tidings.actors._status import finite
from tidings.channels import _orphan_guard
from tidings.channels._agents import AgentTurn
from tidings.channels._sanitize import sanitize_text
from tidings.errors import AgentError, ValidationError

__all__ = ["CommandAgent"]

STDERR_KEEP = 64 * 1024
"""Bytes of stderr kept (the tail) while a turn's process runs."""
STDERR_TAIL = 500
"""Characters of the sanitized stderr tail put into an :class:`AgentError`."""
EXIT_DRAIN = 1.0
"""Seconds the pipes get, once the command has exited and its process group was killed, to
reach their end; what still holds them then (a process that left the group) is not waited for."""
_AFTER_STOP = 1 << 20
"""Bytes at most read from each pipe once EXIT_DRAIN ran out (the largest pipe buffer): a
process that left the group and keeps writing cannot keep the turn reading."""
_POSIX = os.name == "posix"
_WAITERS = trio.CapacityLimiter(math.inf)
"""The threads of the ``waitid`` wait (no pidfds): one per running command for as long as it
runs, so not from trio's default limiter, which the runtime's own work shares (40 running
commands took all of it)."""


def _kill_group(process: trio.Process) -> None:
    """SIGKILL the process group of *process* (on POSIX; it leads its own session).

    Called only while the process is unreaped (running, or exited but not yet waited for), so
    its group id cannot be reused; an exited command's group is killed too, since what it
    spawned may still run (and hold its pipes)."""
    if _POSIX:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def _kill(process: trio.Process) -> None:
    """SIGKILL the process and, on POSIX, its whole process group (see :func:`_kill_group`).

    The process itself is killed directly too, in case it left its group; on POSIX by its
    pid, not ``process.kill()``, which reaps a command that has exited (it polls first), and
    its group must be forgotten by the orphan guard before that (see ``_orphan_guard``).
    """
    _kill_group(process)
    try:
        if _POSIX:
            os.kill(process.pid, signal.SIGKILL)
        else:
            process.kill()
    except ProcessLookupError:
        pass


@final
class CommandAgent:
    """Runs ``argv`` once per turn: the prompt on stdin, stdout streamed back as chunks.

    Stdout is decoded as UTF-8 incrementally (undecodable bytes become U+FFFD) and each piece
    read is sent with ``turn.send_chunk``. Stderr is kept (its last ``STDERR_KEEP`` bytes) for
    error reports. The child also gets ``TIDINGS_SESSION_ID`` and ``TIDINGS_MESSAGE_ID`` in its
    environment, so a stateless command can keep per-session state (empty when there is no
    message id, or the id has a NUL character no environment can hold).

    ``env`` replaces the inherited environment when given (as in :mod:`subprocess`; names and
    values are strings); ``cwd`` is the working directory; ``timeout`` (seconds) bounds each
    turn's process: once it has exited in time, reading what its pipes still hold (see
    ``EXIT_DRAIN``) is not a timeout.

    The turn lasts as long as the command: once it exits, what it left running (a background
    child, on POSIX its whole process group) is killed with SIGKILL, and the reply is what was
    written to stdout until then. So a background child that inherited stdout or stderr does
    not hold the turn open; output it writes after the command's exit is not part of the
    reply. A process that left the group (its own session) and still holds the pipes is given
    ``EXIT_DRAIN`` seconds, then the pipes are closed and the turn ends without it.

    On POSIX the process starts in its own session and cancel (or ``timeout``) kills the whole
    process group with SIGKILL, even once the command itself has exited, so nothing it spawned
    in that group outlives the turn (a process that left the group, by ``setsid`` or by
    daemonizing, is out of reach of a group kill and runs on, as at the command's exit); the
    process is always reaped before :meth:`run` returns or raises.

    If the host dies while a command runs, even by SIGKILL, the command's process group is
    killed too (on POSIX with ``waitid``): the command starts through a short launcher that
    registers its group with the host's guardian process and then execs it in place (same
    pid, environment, descriptors and signal dispositions as a direct start); see
    ``_orphan_guard``.

    Raises:
      ValidationError: (from the constructor, naming the field: ``argv``, ``argv[i]``, ``env``,
        ``cwd`` or ``timeout``) for arguments no process could be started with (a NUL, or a
        lone surrogate that ``os.fsencode`` cannot turn back into a byte).

    Raises (from :meth:`run`):
      AgentError: the command could not be started, exited non-zero or by a signal (the
        message has the exit code and a sanitized stderr tail), or ran past ``timeout``.
    """

    def __init__(self, argv: Sequence[str | os.PathLike[str]], *,
                 env: Mapping[str, str] | None = None,
                 cwd: str | os.PathLike[str] | None = None,
                 timeout: float | None = None) -> None:
        if isinstance(argv, str | bytes):
            raise ValidationError("argv", "must be a list of arguments, not a single string")
        if not isinstance(argv, Sequence):
            raise ValidationError("argv", f"must be a list of arguments, not "
                                          f"{type(argv).__name__}")
        if not argv:
            raise ValidationError("argv", "must name a command")
        for index, arg in enumerate(argv):
            if not isinstance(arg, str | os.PathLike):
                raise ValidationError(f"argv[{index}]",
                                      f"must be a string or path, not {type(arg).__name__}")
            if "\0" in os.fsdecode(arg):
                raise ValidationError(f"argv[{index}]", "must not contain a NUL character")
            _check_encodable(f"argv[{index}]", os.fsdecode(arg))
        if not os.fsdecode(argv[0]):
            raise ValidationError("argv[0]", "must name a command, not be empty")
        if timeout is not None and (isinstance(timeout, bool)
                                    or not isinstance(timeout, int | float)
                                    or not timeout > 0 or not finite(timeout)):
            raise ValidationError("timeout", f"must be a positive number of seconds, got "
                                             f"{timeout!r:.80}")
        if cwd is not None and not isinstance(cwd, str | os.PathLike):
            raise ValidationError("cwd", f"must be a string or path, not {type(cwd).__name__}")
        if cwd is not None and not os.fsdecode(cwd):  # "" is no directory, not the current one
            raise ValidationError("cwd", "must not be empty (None: the current directory)")
        if cwd is not None and "\0" in os.fsdecode(cwd):
            raise ValidationError("cwd", "must not contain a NUL character")
        if cwd is not None:
            _check_encodable("cwd", os.fsdecode(cwd))
        self.argv: tuple[str, ...] = tuple(os.fsdecode(arg) for arg in argv)
        self.env = _checked_env(env) if env is not None else None
        self.cwd = cwd
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"CommandAgent({list(self.argv)!r})"

    @property
    def _command(self) -> str:
        return os.path.basename(self.argv[0]) or self.argv[0]

    async def run(self, turn: AgentTurn) -> None:
        """Run the command for ``turn``; blocks until it exits (or is cancelled and killed)."""
        env = dict(os.environ if self.env is None else self.env)
        # An id with a NUL (a platform's message id may hold anything) cannot be in an
        # environment: it is passed empty, as no id, rather than failing the turn.
        for name, value in (("TIDINGS_SESSION_ID", turn.session_id),
                            ("TIDINGS_MESSAGE_ID", turn.message_id)):
            env[name] = "" if value is None or "\0" in value else value
        argv = list(self.argv)
        launch = await _orphan_guard.prepare(argv, env)
        try:
            try:
                # A launcher starts in the host's environment; it hands the command *env*.
                process = await trio.lowlevel.open_process(
                    argv if launch is None else launch.argv, stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                    env=env if launch is None else None, cwd=self.cwd,
                    start_new_session=_POSIX, pass_fds=() if launch is None else launch.pass_fds)
            except OSError as exc:
                raise self._cannot_start(exc) from exc
            finally:
                if launch is not None:
                    launch.spawned()
            await self._run(process, launch, turn)
        finally:
            if launch is not None:
                launch.close()

    async def _run(self, process: trio.Process, launch: _orphan_guard.Launch | None,
                   turn: AgentTurn) -> None:
        """Drive the started *process* to its end; always kill (if need be) and reap it."""
        stderr = bytearray()
        exited = False  # and unreaped: its group id is still its own until then
        try:
            with trio.move_on_after(math.inf if self.timeout is None else self.timeout) as limit:
                if launch is not None and (error := await launch.exec_error()) is not None:
                    raise self._cannot_start(error) from error
                await _drive(process, turn, stderr, limit)
                exited = True
        finally:
            # Not ``process.returncode``: it reaps a command that has exited, and what it
            # spawned (still holding its pipes, or not) would outlive the turn unkilled.
            with trio.CancelScope(shield=True):
                if not exited:
                    _kill(process)
                if launch is not None:  # before the reap, while the group id is its own
                    await _exited(process)
                    _orphan_guard.forget(process.pid)
                code = await process.wait()
                for stream in (process.stdin, process.stdout, process.stderr):
                    if stream is not None:
                        await stream.aclose()
        if limit.cancelled_caught:
            raise AgentError(f"{self._command} ran past its timeout of {self.timeout}s"
                             f"{self._tail(stderr)}")
        if code:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
            raise AgentError(f"{self._command} {how}{self._tail(stderr)}")

    def _cannot_start(self, exc: OSError) -> AgentError:
        # Not the path (it may be private); but a missing cwd is not a missing command.
        where = ("its cwd: " if self.cwd is not None and exc.filename is not None
                 and os.fsdecode(exc.filename) == os.fsdecode(self.cwd) else "")
        return AgentError(f"cannot start {self._command}: {where}{exc.strerror or exc}")

    @staticmethod
    def _tail(stderr: bytearray) -> str:
        text = sanitize_text(stderr.decode("utf-8", errors="replace"), limit=STDERR_TAIL,
                             keep_end=True)
        return f"; stderr: {text}" if text else ""


def _checked_env(env: object) -> dict[str, str]:
    """*env* as a dict of names to values, refused (field ``env``) unless both are strings a
    process environment can hold: checked here, not by the first turn's spawn."""
    if not isinstance(env, Mapping):
        raise ValidationError("env", f"must be a mapping of names to values, not "
                                     f"{type(env).__name__}")
    for name, value in env.items():
        if not isinstance(name, str) or not name or "=" in name or "\0" in name:
            raise ValidationError("env", f"{name!r} is not an environment variable name")
        if not isinstance(value, str):
            raise ValidationError("env", f"the value of {name} must be a string, not "
                                         f"{type(value).__name__}")
        if "\0" in value:
            raise ValidationError("env", f"the value of {name} must not contain a NUL character")
        _check_encodable("env", name, what=f"the name {name!r}")
        _check_encodable("env", value, what=f"the value of {name!r}")
    return dict(env)


def _check_encodable(field: str, text: str, *, what: str = "it") -> None:
    """A ``ValidationError`` naming *field* unless *text* can be handed to the OS
    (``os.fsencode``): a lone surrogate that stands for a byte (what ``os.fsdecode`` makes of
    one that is not UTF-8) is that byte, any other cannot be encoded. Refused here, since the
    start of every turn's process failed with a bare ``UnicodeEncodeError``."""
    try:
        os.fsencode(text)
    except UnicodeEncodeError as exc:
        raise ValidationError(field, f"{what} is not valid for the OS: a lone surrogate at "
                                     f"index {exc.start} that stands for no byte") from None


async def _drive(process: trio.Process, turn: AgentTurn, stderr: bytearray,
                 limit: trio.CancelScope) -> None:
    """Feed stdin, keep stderr and stream stdout while the command runs; once it exits, kill
    what it left running and read what its pipes still hold. One error, never a group.
    *limit* (the turn's timeout) is lifted at the exit: the command ran in time, and the
    wait for its pipes has its own bound (``EXIT_DRAIN``).

    Returns with the process exited but (where the platform allows) not reaped: reaping is left
    to :meth:`CommandAgent.run`, which must kill the process group first if the turn ends
    before this returns. Without the kill on exit, a background child that inherited stdout
    (``sh -c 'sleep 1000 & echo hi'``) kept the pipe open and the turn waited for it."""
    error: BaseException | None = None
    try:
        async with trio.open_nursery() as nursery:
            read, drain = trio.Event(), _Drain()
            nursery.start_soon(_feed, process, turn.prompt)
            nursery.start_soon(_read, process, turn, stderr, drain, read)
            unreaped = await _exited(process)
            limit.deadline = math.inf
            if unreaped:
                _kill_group(process)
            if process.stdin is not None:
                await process.stdin.aclose()  # a feed still blocked ends at once
            # The group is gone, so the pipes end once what they hold is read, unless a process
            # that left the group holds them: that one is not waited for past EXIT_DRAIN.
            with trio.move_on_after(EXIT_DRAIN):
                await read.wait()
            drain.stop()
    except BaseExceptionGroup as group:
        error = _collapse(group)
    if error is not None:
        raise error


class _Drain:
    """Whether the readers still wait for their pipes' end (the command's exit plus
    ``EXIT_DRAIN``), and the cancel scopes of those now waiting for more bytes."""

    def __init__(self) -> None:
        self.over = False
        self.waiting: set[trio.CancelScope] = set()
        self.left: dict[int, int] = {}  # bytes each stream may still give once stopped

    def stop(self) -> None:
        """From now on the readers take only what their pipes hold (a wait for more ends)."""
        self.over = True
        for scope in self.waiting:
            scope.cancel()

    async def receive(self, stream: trio.abc.ReceiveStream) -> bytes:
        """The next bytes of *stream*; ``b""`` at its end, or once stopped and it holds none.

        Never loses what the pipe holds: a wait is cancelled only while nothing was read."""
        if not self.over:
            with trio.CancelScope() as scope:
                self.waiting.add(scope)
                try:
                    return await stream.receive_some()
                finally:
                    self.waiting.discard(scope)
        await trio.lowlevel.checkpoint()
        fileno = getattr(stream, "fileno", None)
        left = self.left.setdefault(id(stream), _AFTER_STOP)
        if fileno is None or not left:
            return b""
        try:
            data = os.read(fileno(), min(left, 65536))  # non-blocking: trio made it so
        except BlockingIOError:
            return b""
        self.left[id(stream)] = left - len(data)
        return data


async def _exited(process: trio.Process) -> bool:
    """Return once the command has exited; True if it is left unreaped (so its process group
    id is still its own and may be killed), False if waiting had to reap it."""
    if hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(process.pid)
        except OSError:
            fd = -1  # a kernel without pidfds
        if fd >= 0:
            try:
                await trio.lowlevel.wait_readable(fd)
            finally:
                os.close(fd)
            return True
    if _POSIX and hasattr(os, "waitid") and hasattr(os, "WNOWAIT"):
        await trio.to_thread.run_sync(
            functools.partial(os.waitid, os.P_PID, process.pid, os.WEXITED | os.WNOWAIT),
            abandon_on_cancel=True, limiter=_WAITERS)
        return True
    await process.wait()
    return False


async def _read(process: trio.Process, turn: AgentTurn, stderr: bytearray, drain: _Drain,
                done: trio.Event) -> None:
    """Read stdout and stderr to their end (or *drain*'s); then set *done*."""
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_keep_tail, process, stderr, drain)
        await _stream(process, turn, drain)
    done.set()


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


def _collapse(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one exception a group from :func:`_drive` stands for (a real error before the
    ``Cancelled`` riding along); the group itself when several things really failed."""
    leaves = _leaves(group)
    real = [leaf for leaf in leaves if not isinstance(leaf, trio.Cancelled)]
    if len(real) == 1:
        return real[0]
    return leaves[0] if not real else group


async def _feed(process: trio.Process, prompt: str) -> None:
    """Write the prompt to stdin and close it; a child that does not read it is fine."""
    assert process.stdin is not None
    try:
        await process.stdin.send_all(prompt.encode("utf-8", errors="replace"))
        await process.stdin.aclose()
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass


async def _keep_tail(process: trio.Process, stderr: bytearray, drain: _Drain) -> None:
    assert process.stderr is not None
    while data := await drain.receive(process.stderr):
        stderr += data
        if len(stderr) > STDERR_KEEP:
            del stderr[:-STDERR_KEEP]


async def _stream(process: trio.Process, turn: AgentTurn, drain: _Drain) -> None:
    assert process.stdout is not None
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    while data := await drain.receive(process.stdout):
        text = decoder.decode(data)
        if text:
            await turn.send_chunk(text)
    rest = decoder.decode(b"", final=True)
    if rest:
        await turn.send_chunk(rest)
