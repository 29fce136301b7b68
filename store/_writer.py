"""Group commit, trio side: the writer actor that owns the only write connection.

The writer waits for one request, takes every other request already waiting in its mailbox (up
to ``max_batch``), runs them all in one transaction with a single worker-thread hop
(``_batch.execute_batch``), and only then answers each caller. While the thread commits, the
event loop goes on preparing the next batch, so loop work and disk work overlap.

The mailbox is anything with ``await receive()`` and ``receive_nowait()``: a trio memory channel
when the store runs on its own (:func:`tidings.store.open_store`), the supervision kernel's
mailbox when the runtime supervises the writer.
"""

from __future__ import annotations

import logging
import pathlib
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, get_args

import attrs
import trio

from tidings.store._batch import BatchOutcome, execute_batch
from tidings.store._connect import Synchronous, close_writer, connect_writer
from tidings.store._errors import StoreError, ValidationError
from tidings.store._ops import Op
from tidings.store._real_time import move_on_after_real
from tidings.store._writer_process import (
    ANSWER_GRACE,
    MAX_IN_FLIGHT,
    RESUME_FRAME,
    SPLIT_AT,
    Answers,
    WriterChild,
    encode_batch,
    open_child,
    unknown_outcome,
)
from tidings.store._writer_stderr import StderrRelay

__all__ = ["EXECUTORS", "Executor", "StoreWriter", "WriteRequest", "WriterStatistics",
           "check_executor"]

Executor = Literal["thread", "process"]
"""Where batches commit: a worker thread of this process, or a child writer process
(``_writer_process``: the SQLite work then runs beside the event loop, not under its GIL)."""

EXECUTORS: tuple[Executor, ...] = get_args(Executor)
"""Every :data:`Executor`, in the order the options list them."""


def check_executor(value: object, field: str) -> Executor:
    """*value* if it names one of :data:`EXECUTORS`; else :class:`ValidationError` on *field*
    (each public entry point that takes one checks it before it writes anything)."""
    if value not in EXECUTORS:
        raise ValidationError(field, f"must be {' or '.join(map(repr, EXECUTORS))}, "
                                     f"got {value!r}")
    return value  # type: ignore[return-value]

log = logging.getLogger("tidings.store")


class Receiver(Protocol):
    async def receive(self) -> Any: ...
    def receive_nowait(self) -> Any: ...


class WriteRequest:
    """One caller's ops, answered after the transaction that holds them has committed.

    ``on_commit(results)`` runs in the writer task right after the commit, whether or not the
    caller is still waiting: it is how work that must follow a durable write (dispatching a
    queued delivery, say) never depends on the caller surviving cancellation. ``on_error(error)``
    runs instead when the request fails (it was not committed; or, when the error says it "may
    or may not have committed", the writer cannot know: a writer process died before it
    answered), so a caller that does not wait (:meth:`Store.commit_nowait`) still hears of it.

    Waiting parks the caller with ``trio.lowlevel`` directly (no Event, no parking lot): this is
    the hottest object in tidings, one per write.
    """

    __slots__ = ("_done", "_waiter", "error", "on_commit", "on_error", "ops", "result")

    def __init__(self, ops: Sequence[Op],
                 on_commit: Callable[[list[Any]], None] | None = None,
                 on_error: Callable[[BaseException], None] | None = None) -> None:
        self.ops = ops
        self.on_commit = on_commit
        self.on_error = on_error
        self.result: list[Any] | None = None
        self.error: BaseException | None = None
        self._done = False
        self._waiter: trio.lowlevel.Task | None = None

    def finish(self, result: list[Any] | None, error: BaseException | None) -> None:
        """Record the outcome and wake the caller (sync, never a checkpoint)."""
        if self._done:
            return
        self.result, self.error, self._done = result, error, True
        if self._waiter is not None:
            trio.lowlevel.reschedule(self._waiter)
            self._waiter = None
        if error is None and self.on_commit is not None:
            try:
                self.on_commit(result or [])
            except Exception:
                log.exception("event=on_commit_failed")
        elif error is not None and self.on_error is not None:
            try:
                self.on_error(error)
            except Exception:
                log.exception("event=on_error_failed")

    async def wait(self) -> list[Any]:
        """Block until committed; return one result per op or raise the request's error.

        Always a checkpoint. Cancelling the wait does not withdraw the write.
        """
        if self._done:
            await trio.lowlevel.checkpoint()
        else:
            if self._waiter is not None:
                raise RuntimeError("a write request has one waiter")
            self._waiter = trio.lowlevel.current_task()

            def abort(_: object) -> trio.lowlevel.Abort:
                self._waiter = None
                return trio.lowlevel.Abort.SUCCEEDED

            await trio.lowlevel.wait_task_rescheduled(abort)
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result


@attrs.frozen
class WriterStatistics:
    """A snapshot of the writer's work since it was created."""

    batches: int
    requests: int
    statements: int
    isolated_batches: int
    largest_batch: int


class StoreWriter:
    """Owns the write connection; run :meth:`serve` as a (supervised) task."""

    def __init__(self, path: pathlib.Path, *, synchronous: Synchronous = "FULL",
                 max_batch: int = 512, executor: Executor = "thread") -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch: must be at least 1, got {max_batch}")
        self.path = path
        self.executor = check_executor(executor, "executor")
        self.synchronous: Synchronous = synchronous
        self.max_batch = max_batch
        self._limiter = trio.CapacityLimiter(1)
        self._child_pid: int | None = None
        self._listeners: list[Callable[[], None]] = []
        self._batches = self._requests = self._statements = self._isolated = 0
        self._largest = 0

    @property
    def process_id(self) -> int | None:
        """The writer process's pid while one runs (``executor="process"``), else ``None``."""
        return self._child_pid

    def add_listener(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` (sync) after every committed batch, e.g. to wake event readers."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[], None]) -> None:
        """Stop calling a listener :meth:`add_listener` added (``ValueError`` if it was not)."""
        self._listeners.remove(listener)

    def dead_letter(self, request: object, error: BaseException) -> None:
        """A request the writer will never see (a fault took it from the mailbox, or the
        mailbox closed with it inside): answer it with :class:`StoreError`, not committed.
        Sync; a supervisor calls it (``ChildSpec(dead_letter=...)``)."""
        if isinstance(request, WriteRequest):
            request.finish(None, StoreError(f"the writer lost this write before committing it "
                                            f"({type(error).__name__}: {error})"))

    async def _take_batch(self, mailbox: Receiver, into: list[WriteRequest]) -> bool:
        """Wait for a request, then take what else is waiting (up to ``max_batch``) into
        *into*. False when the mailbox has ended."""
        try:
            into.append(await mailbox.receive())
        except trio.EndOfChannel:
            return False
        # One scheduler round for tasks woken by the last commit (they tend to write again at
        # once): fewer, larger batches for the same latency.
        await trio.lowlevel.cancel_shielded_checkpoint()
        self._drain(mailbox, into)
        return True

    def _drain(self, mailbox: Receiver, into: list[WriteRequest]) -> None:
        """Add what is already waiting in *mailbox* to *into*, up to ``max_batch`` (sync)."""
        while len(into) < self.max_batch:
            try:
                into.append(mailbox.receive_nowait())
            except (trio.WouldBlock, trio.EndOfChannel):
                return

    def _record(self, batch: list[WriteRequest], outcome: BatchOutcome) -> None:
        """Count a committed batch, answer its requests and tell the listeners (sync)."""
        self._batches += 1
        self._requests += len(batch)
        self._statements += outcome.statements
        self._isolated += not outcome.merged
        self._largest = max(self._largest, len(batch))
        for request, result, error in zip(batch, outcome.results, outcome.errors, strict=True):
            request.finish(result, error)
        self._notify()

    def _notify(self) -> None:
        """Call every listener (sync): a batch committed, or may have."""
        for listener in self._listeners:
            try:
                listener()
            except Exception:  # a listener's bug must not stop the writer
                log.exception("event=writer_listener_failed")

    async def _serve_thread(self, mailbox: Receiver, conn: sqlite3.Connection,
                            task_status: trio.TaskStatus[None]) -> None:
        in_flight: list[WriteRequest] = []
        try:
            task_status.started()
            while await self._take_batch(mailbox, in_flight):
                outcome = await self._execute_here(conn, in_flight)
                batch, in_flight = in_flight, []
                self._record(batch, outcome)
        finally:
            _not_committed(in_flight)

    async def _serve_process(self, mailbox: Receiver, conn: sqlite3.Connection,
                             task_status: trio.TaskStatus[None]) -> None:
        child = open_child(self.path, self.synchronous)
        relay = StderrRelay(child.stderr, child.pid)
        try:
            async with trio.open_nursery() as nursery:
                # From the start (the child may write before it is ready) to the pipe's end,
                # after the child's: its last lines are logged however it stopped.
                nursery.start_soon(relay.run)
                try:
                    await self._serve_child(child, mailbox, conn, task_status)
                finally:
                    relay.child_exited()  # it has been waited for, whatever happened
        finally:
            child.stderr.close()

    async def _serve_child(self, child: WriterChild, mailbox: Receiver,
                           conn: sqlite3.Connection, task_status: trio.TaskStatus[None]) -> None:
        """Send batches to *child* and record its answers until the mailbox ends; then, or
        on any error, stop the child and wait for it."""
        answers = Answers(child.answers)
        taken: list[WriteRequest] = []
        try:
            self._child_pid = await answers.wait_ready()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._record_answers, answers, conn)
                task_status.started()
                while await self._take_batch(mailbox, taken):
                    if len(answers.pending) >= MAX_IN_FLIGHT:
                        # The child is behind: what arrives meanwhile joins this batch.
                        await answers.wait_room()
                        self._drain(mailbox, taken)
                    await self._dispatch(taken, answers, child, conn)
                await answers.wait_idle()
                nursery.cancel_scope.cancel(reason="the writer's mailbox ended")
        finally:
            _not_committed(taken)
            try:
                # Batches the child has may commit whatever happens here: wait for their
                # answers (bounded). Then the child holds no transaction, and stopping it loses
                # nothing.
                with move_on_after_real(ANSWER_GRACE, shield=True) as grace:
                    await self._record_remaining(answers, conn)
                if grace.cancelled_caught:  # a stuck child (a lock, a disk): say which one
                    log.warning("event=writer_process_unanswered batches=%d grace=%s pid=%s",
                                len(answers.pending), ANSWER_GRACE, self._child_pid)
            finally:
                uncertain = bool(answers.pending)
                answers.fail_pending(unknown_outcome)
                if uncertain:  # they may have committed: what they wrote is for followers too
                    self._notify()
                _stop_child(child)
                with trio.CancelScope(shield=True):  # prompt: the child has been killed
                    await child.wait()
                self._child_pid = None

    async def _dispatch(self, taken: list[WriteRequest], answers: Answers,
                        child: WriterChild, conn: sqlite3.Connection) -> None:
        """Send *taken* to the child (in two halves if it was idle), or commit it here when an
        op cannot cross the pipe. Empties *taken* once every request is sent or answered.

        Blocks while the child's stdin pipe is full, and can be cancelled there: the requests
        not yet sent whole then stay in *taken*, for the caller to answer not committed."""
        halves = [taken[:]]
        if not answers.pending and len(taken) >= SPLIT_AT:
            middle = (len(taken) + 1) // 2
            halves = [taken[:middle], taken[middle:]]
        frames = [encode_batch(half) for half in halves]
        if any(frame is None for frame in frames):
            await answers.wait_idle()  # transactions stay in the order of their batches
            outcome = await self._execute_here(conn, taken)
            batch = taken[:]
            taken.clear()
            self._record(batch, outcome)
            return
        if answers.resume_owed:  # the child skips batches: resume it once they ran here
            await answers.wait_idle()
            await _send(child, RESUME_FRAME)
            answers.resume_owed = False
        for half, frame in zip(halves, frames, strict=True):
            assert frame is not None
            # Not shielded: a child that stopped reading (a lock, a stuck disk) fills the pipe,
            # and the writer must still stop when cancelled. A frame cut short is harmless:
            # nothing is ever sent after it (the cancel leaves _serve_process, which stops the
            # child), so the child never reads it whole and never runs it, and its requests,
            # still in *taken*, are answered not committed. The pipe's send_all only raises
            # before its last byte is written (test_writer_stuck_child pins this).
            await _send(child, frame)
            answers.sent(half)  # no checkpoint since the last byte: a whole frame is owed
            del taken[:len(half)]

    async def _record_answers(self, answers: Answers, conn: sqlite3.Connection) -> None:
        while True:
            await self._record_next(answers, conn)

    async def _record_remaining(self, answers: Answers, conn: sqlite3.Connection) -> None:
        try:
            while answers.pending:
                await self._record_next(answers, conn)
        except StoreError:  # the child is gone: fail_pending answers the rest
            return

    async def _record_next(self, answers: Answers, conn: sqlite3.Connection) -> None:
        """Record the next answer; a batch the child could not read commits here instead."""
        batch, outcome = await answers.next()
        if outcome is None:
            try:
                outcome = await self._execute_here(conn, batch)
            except BaseException:  # it left the pending batches: nobody else would answer it
                _not_committed(batch)
                answers.recorded()
                raise
        self._record(batch, outcome)
        answers.recorded()

    async def _execute_here(self, conn: sqlite3.Connection,
                            batch: list[WriteRequest]) -> BatchOutcome:
        """Run *batch* in one transaction on this process's connection, in a worker thread."""
        return await trio.to_thread.run_sync(
            execute_batch, conn, [request.ops for request in batch], limiter=self._limiter)

    def statistics(self) -> WriterStatistics:
        """A frozen :class:`WriterStatistics` snapshot (batches, requests, statements,
        isolated batches, the largest batch). Never blocks."""
        return WriterStatistics(self._batches, self._requests, self._statements,
                                self._isolated, self._largest)

    async def serve(self, mailbox: Receiver, *,
                    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Commit batches from *mailbox* until it ends (closed and drained).

        Requests taken from the mailbox but not committed when this task stops (a crash, a
        cancel) are answered with :class:`StoreError`; none is retried by a later incarnation.
        """
        conn = await trio.to_thread.run_sync(connect_writer, self.path, self.synchronous,
                                             limiter=self._limiter)
        try:
            if self.executor == "process":
                await self._serve_process(mailbox, conn, task_status)
            else:
                await self._serve_thread(mailbox, conn, task_status)
        except BaseException:
            conn.close()
            raise
        # (the database file then holds every commit: see close_writer)
        await trio.to_thread.run_sync(close_writer, conn, limiter=self._limiter)


def _not_committed(requests: list[WriteRequest]) -> None:
    for request in requests:
        request.finish(None, StoreError("the writer stopped before this write committed"))


async def _send(child: WriterChild, data: bytes) -> None:
    """Write *data* to the child's input. A broken pipe means the child is gone: its output
    ends too, and the task reading its answers fails the writer with the error that says so
    ("the writer process exited ..."). Wait for that (bounded) rather than raise a second,
    bare ``BrokenResourceError`` beside it, which made the two a group of errors."""
    try:
        await child.stdin.send_all(data)
    except trio.BrokenResourceError as exc:
        with move_on_after_real(ANSWER_GRACE):
            await trio.sleep_forever()  # cancelled when the reader's error ends the writer
        raise StoreError("the writer process stopped reading its input") from exc


def _stop_child(child: WriterChild) -> None:
    child.stdin.close()
    child.answers.close()
    child.kill()
