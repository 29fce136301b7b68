"""The writer process: runs group-commit batches on its own connection, outside the host's GIL.

Started by ``_writer_process`` with the database path, ``FULL`` or ``NORMAL``, its host's pid and
the file descriptor to answer on, it opens its connection, says it is ready, then reads batches from
stdin and answers each on that descriptor, in order (not on stdout, where an interpreter's start-up
hooks may print). A frame is a 4-byte big-endian length and a pickle. A batch is a list of requests,
each a list of ops; the answer is ``(results, errors, merged, statements)``, with each error encoded
by :func:`encode_error` (``errors`` is ``None`` when every request succeeded). A batch that will not
unpickle is answered ``unreadable``, and so is every batch after it (unread, unrun) until the host
sends :data:`RESUME`: the host commits those batches itself, in order, and resumes the child only
then, so no later batch can commit here before an earlier one commits there. It runs
:func:`execute_batch`, the same code the in-process writer runs, so both writers commit the same
transactions.

The process stops at end of input, when the host closes the pipe; input that ends inside a frame
(the host was cancelled while sending it) stops it too, and that frame never runs. If the host
dies, the child dies with it at once (Linux: ``PR_SET_PDEATHSIG``), so it never commits a batch
after its host is gone: a kill of the host leaves the database exactly as a kill of an
in-process writer would (a commit either reached the disk before the kill or it did not).
Elsewhere the child exits at end of input, after the batch in hand.

The child prints nothing of its own. Its stderr and stdout are a pipe whose lines the host logs
one record each (``_writer_stderr``: a warning, a start-up hook's print, a fatal error), but an
unexpected error (a database it cannot open, a bug) is sent as a last frame instead,
``(CRASHED, error, traceback)``, for the host to log as one event with the traceback a field;
only when that pipe is gone too is the traceback printed.
"""

from __future__ import annotations

import ctypes
import os
import pathlib
import pickle
import signal
import sys
import traceback
from typing import Any, BinaryIO

from tidings.store._batch import execute_batch
from tidings.store._connect import connect_writer
from tidings.store._errors import ConflictError, StoreError, ValidationError

__all__ = ["CRASHED", "HEADER", "RESUME", "UNREADABLE", "decode_error", "encode_error", "frame",
           "main", "read_frame", "write_frame"]

HEADER = 4
"""Bytes of a frame's big-endian length prefix."""

UNREADABLE = "unreadable"
"""First item of the answer to a batch the child could not unpickle (nothing of it ran); the
host then commits that batch on its own connection, where a bad request fails alone."""

CRASHED = "crashed"
"""First item of the child's last frame when it failed unexpectedly: ``(CRASHED, error,
traceback)``, in place of an answer (or of ``ready``)."""

RESUME = b""
"""The payload (never a pickle's) of the frame that ends skipping: after an ``unreadable``
answer the child answers every later batch ``unreadable`` too, without running it, until this
frame comes (the host sends it once it has committed the skipped batches itself)."""


def encode_error(error: BaseException | None) -> tuple[str, str] | None:
    """``(kind, message)``: the writer's errors cross the pipe as their class and text."""
    if error is None:
        return None
    if isinstance(error, ConflictError):
        return ("conflict", str(error))
    if isinstance(error, ValidationError):  # "field: message"
        return ("validation", str(error))
    if isinstance(error, StoreError):
        return ("store", str(error))
    return ("store", f"{type(error).__name__}: {error}")


def decode_error(encoded: tuple[str, str] | None) -> BaseException | None:
    if encoded is None:
        return None
    kind, message = encoded
    if kind == "validation":
        field, _, text = message.partition(": ")
        return ValidationError(field, text)
    return ConflictError(message) if kind == "conflict" else StoreError(message)


def read_frame(stream: BinaryIO) -> bytes | None:
    """The next frame's payload, or ``None`` at end of input."""
    header = _read_exact(stream, HEADER)
    if header is None:
        return None
    payload = _read_exact(stream, int.from_bytes(header, "big"))
    if payload is None:
        raise EOFError("the writer pipe ended inside a frame")
    return payload


def frame(payload: bytes) -> bytes:
    """*payload* with its length prefix: what one frame is on the pipe, either way."""
    return len(payload).to_bytes(HEADER, "big") + payload


def write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(frame(payload))
    stream.flush()


def _read_exact(stream: BinaryIO, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def serve(path: pathlib.Path, synchronous: Any, requests_in: BinaryIO,
          answers_out: BinaryIO) -> None:
    """Answer batches from *requests_in* until it ends (blocking)."""
    conn = connect_writer(path, synchronous)
    try:
        write_frame(answers_out, pickle.dumps(("ready", os.getpid())))
        skipping = False
        while (payload := read_frame(requests_in)) is not None:
            if payload == RESUME:
                skipping = False
                continue
            if skipping:  # the host commits it, after the unreadable batch before it
                write_frame(answers_out, pickle.dumps((UNREADABLE, "after an unreadable batch")))
                continue
            try:
                requests = pickle.loads(payload)
            except Exception as exc:  # noqa: BLE001 - a value that will not load: the host runs it
                write_frame(answers_out, pickle.dumps((UNREADABLE, f"{type(exc).__name__}: {exc}")))
                skipping = True
                continue
            outcome = execute_batch(conn, requests)
            errors = ([encode_error(error) for error in outcome.errors]
                      if any(error is not None for error in outcome.errors) else None)
            write_frame(answers_out, pickle.dumps(
                (outcome.results, errors, outcome.merged, outcome.statements),
                protocol=pickle.HIGHEST_PROTOCOL))
    finally:
        conn.close()


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to kill this process when its parent dies (Linux); if the parent is
    already gone, exit now."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


def main(argv: list[str]) -> int:
    path, synchronous, parent_pid, answers_fd = argv
    die_with_parent(int(parent_pid))
    answers_out = os.fdopen(int(answers_fd), "wb")
    os.dup2(2, 1)  # anything printed goes to stderr, whose lines the host logs
    try:
        serve(pathlib.Path(path), synchronous, sys.stdin.buffer, answers_out)
    except BrokenPipeError:  # the host closed its end first: nobody is left to answer
        return 1
    except EOFError:  # input ended inside a frame: the host was cancelled mid-send
        return 1
    except Exception as exc:  # noqa: BLE001 - said to the host, which logs it in its form
        _report_crash(answers_out, exc)
        return 1
    return 0


def _report_crash(answers_out: BinaryIO, error: Exception) -> None:
    """Send *error* and its traceback as the last frame (see :data:`CRASHED`); printed
    only when the host cannot hear it (the pipe is gone: nobody reads that log either)."""
    text = traceback.format_exc()
    try:
        write_frame(answers_out, pickle.dumps((CRASHED, f"{type(error).__name__}: {error}",
                                               text)))
    except Exception:  # noqa: BLE001 - a broken pipe, a full disk for stderr's sake...
        sys.stderr.write(text)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
