"""The writer's process backend: batches commit in a child process, beside the event loop.

With the thread backend the loop and the writer thread share one GIL, so they take turns: every
return from SQLite into Python waits for the loop to let go. Here the SQLite work runs in a
child (``_writer_child``) with its own interpreter, and the loop only pickles ops and unpickles
answers. Batches are sent as soon as the writer has them, without waiting for the previous
answer, so the child commits one batch while the loop prepares the next; but at most
:data:`MAX_IN_FLIGHT` at a time. A child that falls behind (a busy disk) otherwise got a queue
of small batches, each paying a commit (an ``fsync``) of its own, and fell further behind; held
back, the requests that arrive meanwhile go as one batch when an answer comes, sized to the
child's pace. When the child is idle
and many requests arrive at once (closed-loop senders woken by one commit), the first batch is
split in two: the first half's answer then comes back while the second half commits, and the
two halves keep alternating instead of moving in one wave.

Requests whose ops cannot cross a pipe (a :class:`Call` holds a function, or a value will not
pickle) run in-process on the writer's own connection, after every batch sent before them has
been answered, so the order of transactions is the order of batches either way. A batch the
child cannot unpickle is answered ``unreadable`` (nothing of it ran) and committed in-process
too, where a bad request fails alone; the child then skips (answers ``unreadable``) every later
batch until the writer, once it has committed all of them here in order, sends ``RESUME``.
A child that fails unexpectedly says so in a last frame (``CRASHED``): logged here, in the
host's log form (``event=writer_process_crashed``, its traceback a field), not printed by the
child among the host's log lines. Whatever else its interpreter writes (stderr and stdout: a
warning, a start-up hook's print, a fatal error) goes to a pipe of its own, whose lines the
host logs (``_writer_stderr``).
"""

from __future__ import annotations

import collections
import json
import logging
import os
import pickle
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import trio

from tidings.store._batch import BatchOutcome
from tidings.store._errors import StoreError
from tidings.store._ops import Call
from tidings.store._writer_child import (
    CRASHED,
    HEADER,
    RESUME,
    UNREADABLE,
    decode_error,
    frame,
)

if TYPE_CHECKING:
    import pathlib

    from tidings.store._writer import WriteRequest

__all__ = ["ANSWER_GRACE", "MAX_IN_FLIGHT", "RESUME_FRAME", "SPLIT_AT", "Answers", "WriterChild",
           "child_command", "encode_batch", "open_child", "unknown_outcome"]

log = logging.getLogger("tidings.store")

SPLIT_AT = 8
"""An idle child's first batch of at least this many requests is sent as two halves."""

MAX_IN_FLIGHT = 4
"""Batches sent to the child and not yet answered, at most; the rest wait in the writer's
mailbox and go as one batch when an answer comes. Measured with ``bench/delivery.py``'s
served variant (100 senders, 6,000 deliveries, runs alternating with no cap): on a quiet
machine 8,998/s against 8,461/s (medians of 10, within the spread: with a batch in the pipe
behind the one committing the child never waits for the loop, so a cap this size seldom
binds); beside two processes doing large writes with ``fsync`` (a busy disk) 6,044/s against
5,103/s with a lower p99 (caps of 2 and 3 were between the two, and gave the same rates as no
cap on a quiet machine but a worse p99)."""

ANSWER_GRACE = 10.0
"""Seconds a stopping writer waits for the answers of batches the child already has."""

RESUME_FRAME = frame(RESUME)
"""Ends the child's skipping after an ``unreadable`` answer (see ``_writer_child``)."""

def child_command(path: pathlib.Path, synchronous: str) -> tuple[list[str], dict[str, str]]:
    """The child's argv and environment: this interpreter, this ``sys.path``.

    The child ignores SIGINT, SIGTERM and SIGHUP, first thing (before its imports): its
    lifetime is its host's (it stops at end of input, or dies with the host). A terminal's
    Ctrl-C reaches the whole foreground process group, as its hangup does (a closed window, a
    lost ssh session), and a service manager's stop may signal every process of the service:
    the child died of them at once (a ``KeyboardInterrupt`` traceback) while its host began a
    graceful stop that needed it to commit."""
    paths = [os.path.abspath(entry or os.curdir) for entry in sys.path]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    boot = ("import signal, sys\n"
            "for name in ('SIGINT', 'SIGTERM', 'SIGHUP'):\n"
            "    if hasattr(signal, name): signal.signal(getattr(signal, name), signal.SIG_IGN)\n"
            "from tidings.store._writer_child import main; sys.exit(main(sys.argv[1:]))")
    return [sys.executable, "-c", boot, str(path), synchronous, str(os.getpid())], env


class WriterChild:
    """The writer process and the host's ends of its pipes: ``stdin`` (frames to it),
    ``answers`` (its answers) and ``stderr`` (what its interpreter writes, stdout too), trio
    streams."""

    __slots__ = ("_popen", "answers", "stderr", "stdin")

    def __init__(self, popen: subprocess.Popen[bytes], stdin: trio.lowlevel.FdStream,
                 answers: trio.lowlevel.FdStream, stderr: trio.lowlevel.FdStream) -> None:
        self._popen = popen
        self.stdin = stdin
        self.answers = answers
        self.stderr = stderr

    @property
    def pid(self) -> int:
        return self._popen.pid

    def kill(self) -> None:
        self._popen.kill()

    async def wait(self) -> int:
        """Until it has exited (it has been killed: a short wait); its exit status."""
        return await trio.to_thread.run_sync(self._popen.wait)


def open_child(path: pathlib.Path, synchronous: str) -> WriterChild:
    """Start the writer process (sync: spawning it takes under a millisecond).

    Spawned from the event loop's own thread, on purpose. The child dies with "its parent"
    (``PR_SET_PDEATHSIG``), which the kernel takes to be the *thread* that spawned it, not its
    process: ``trio.lowlevel.open_process`` spawns from one of trio's worker threads, which
    ends after 10 s without work, and the child was killed with it (an idle host lost its
    writer every 10 s). The loop's thread lives as long as the writer can run.

    The child answers on a pipe of its own, whose descriptor ends its argv, not on its stdout:
    what its interpreter prints before the child's code runs (a ``sitecustomize`` or ``.pth``
    banner) was read as a frame, whose "length" the host then waited for, for ever.

    Its stderr and stdout are one more pipe, not the host's stderr: the host logs its lines
    (``_writer_stderr``), where they landed raw among the host's log lines."""
    argv, env = child_command(path, synchronous)
    opened: list[int] = []  # closed if anything fails (out of descriptors, Popen's OSError)
    try:
        opened += os.pipe()  # non-inheritable: Popen gives the child its own copy
        opened += os.pipe()
        opened += os.pipe()
        child_stdin, to_child, from_child, child_answers, from_stderr, child_stderr = opened
        popen = subprocess.Popen([*argv, str(child_answers)], stdin=child_stdin,
                                 stdout=child_stderr, stderr=child_stderr, env=env,
                                 pass_fds=(child_answers,))
    except BaseException:
        for fd in opened:
            os.close(fd)
        raise
    for fd in (child_stdin, child_answers, child_stderr):
        os.close(fd)
    return WriterChild(popen, trio.lowlevel.FdStream(to_child),
                       trio.lowlevel.FdStream(from_child), trio.lowlevel.FdStream(from_stderr))


def encode_batch(requests: Sequence[WriteRequest]) -> bytes | None:
    """The frame for *requests*, or ``None`` if an op cannot cross the pipe (a :class:`Call`,
    a value that will not pickle, ops that are no list of ops, or a batch whose pickle is too
    long for a frame's ``HEADER``-byte length: 4 GiB)."""
    ops = [request.ops for request in requests]
    try:
        if any(isinstance(op, Call) for request_ops in ops for op in request_ops):
            return None
        payload = pickle.dumps(ops, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - a value that will not pickle, or ops that are no list
        return None  # of ops: commit it in-process, where a bad request fails alone
    if len(payload) >= 1 << (8 * HEADER):  # its length would not fit the frame's prefix
        return None
    return frame(payload)


class Answers:
    """Reads the child's answers, in the order the batches were sent.

    ``resume_owed``: the child answered a batch ``unreadable`` and now skips every batch until
    it is sent ``RESUME_FRAME``, which the writer must send only once it is idle.
    """

    def __init__(self, stream: trio.abc.ReceiveStream) -> None:
        self._stream = stream
        self._buffer = bytearray()
        self.pending: collections.deque[list[WriteRequest]] = collections.deque()
        self.resume_owed = False
        self._idle = trio.Event()
        self._idle.set()
        self._answered = trio.Event()

    def sent(self, batch: list[WriteRequest]) -> None:
        self.pending.append(batch)
        if self._idle.is_set():
            self._idle = trio.Event()

    async def wait_idle(self) -> None:
        """Until every sent batch has been answered and recorded (:meth:`recorded`): one the
        child could not read has then committed here too."""
        await self._idle.wait()

    async def wait_room(self) -> None:
        """Until fewer than :data:`MAX_IN_FLIGHT` batches are unanswered (or the child is
        gone: :meth:`fail_pending`). A checkpoint."""
        while len(self.pending) >= MAX_IN_FLIGHT:
            await self._answered.wait()
        await trio.lowlevel.checkpoint()

    def recorded(self) -> None:
        """The batch :meth:`next` gave has been recorded (sync)."""
        self._answered.set()
        self._answered = trio.Event()
        if not self.pending:
            self._idle.set()

    async def wait_ready(self) -> int:
        """Until the child has opened its connection; returns its pid. Raises
        :class:`StoreError` if it crashes or exits first."""
        answer = await self._answer()
        kind, pid = answer
        if kind != "ready":
            raise StoreError(f"the writer process said {kind!r} instead of 'ready'")
        return int(pid)

    async def next(self) -> tuple[list[WriteRequest], BatchOutcome | None]:
        """The oldest pending batch and its outcome; ``None`` when the child could not read
        the batch (nothing of it ran: commit it in-process, then call :meth:`recorded`, as
        after any answer). Raises :class:`StoreError` if the child's output ends first (it died:
        the batch may or may not have committed)."""
        answer = await self._answer()
        batch = self.pending.popleft()
        if answer[0] == UNREADABLE:
            self.resume_owed = True
            return batch, None
        results, errors, merged, statements = answer
        decoded = ([None] * len(batch) if errors is None
                   else [decode_error(error) for error in errors])
        return batch, BatchOutcome(results, decoded, merged=merged, statements=statements)

    async def _answer(self) -> Any:
        """The next frame, unpickled. Raises :class:`StoreError` if the child crashed (its
        last frame, :data:`CRASHED`: logged here, with its traceback) or exited."""
        answer = pickle.loads(await self._next_frame())
        if isinstance(answer, tuple) and len(answer) == 3 and answer[0] == CRASHED:
            _, error, text = answer
            log.error("event=writer_process_crashed batches_unanswered=%d error=%s "
                      "traceback=%s", len(self.pending), json.dumps(error), json.dumps(text))
            raise StoreError(f"the writer process crashed: {error}")
        return answer

    async def _next_frame(self) -> bytes:
        while True:
            payload = self._take_frame()
            if payload is not None:
                return payload
            chunk = await self._stream.receive_some(1 << 16)
            if not chunk:
                raise StoreError(f"the writer process exited with {len(self.pending)} "
                                 "batch(es) unanswered")
            self._buffer += chunk

    def _take_frame(self) -> bytes | None:
        buffer = self._buffer
        if len(buffer) < HEADER:
            return None
        end = HEADER + int.from_bytes(buffer[:HEADER], "big")
        if len(buffer) < end:
            return None
        payload = bytes(buffer[HEADER:end])
        del buffer[:end]
        return payload

    def fail_pending(self, make_error: Callable[[], BaseException]) -> None:
        """Answer every unanswered batch with an error (the child is gone)."""
        while self.pending:
            for request in self.pending.popleft():
                request.finish(None, make_error())
        self._idle.set()
        self._answered.set()


def unknown_outcome() -> StoreError:
    return StoreError("the writer process stopped before answering; this write may or may "
                      "not have committed")
