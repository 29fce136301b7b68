"""The store facade: one writer (group commit) plus a pool of readers over one database."""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import trio

from tidings.store._connect import (
    Synchronous,
    check_path,
    check_synchronous,
    connect_writer,
    prepare_path,
)
from tidings.store._errors import (
    MailboxClosedError,
    StoreClosedError,
    StoreError,
    ValidationError,
)
from tidings.store._groups import collapse
from tidings.store._ops import Op
from tidings.store._reader import ReadPool
from tidings.store._schema import migrate
from tidings.store._writer import (
    Executor,
    StoreWriter,
    WriteRequest,
    WriterStatistics,
    check_executor,
)

__all__ = ["MAX_TIME", "Store", "check_clock", "open_store", "prepare_store"]

T = TypeVar("T")

MAX_TIME = 253_402_300_799
"""The last second of year 9999 in unix seconds: the latest time a reader can print."""

Submit = Callable[[WriteRequest], Awaitable[None]]


class Store:
    """A migrated database with its writer and readers.

    ``epoch`` is this process's claimant id: every claim this process writes carries it, so
    recovery in a later process knows at once which ``sending`` rows were left by a dead one.
    ``clock`` is the wall clock for stored timestamps (unix seconds), a seam for tests.
    """

    def __init__(self, path: os.PathLike[str], *, epoch: int, writer: StoreWriter,
                 readers: ReadPool, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self.epoch = epoch
        self.claimant = f"epoch:{epoch}"
        self.started_at = clock()
        self.writer = writer
        self.readers = readers
        self.clock = clock
        self._submit: Submit | None = None
        self._submit_nowait: Callable[[WriteRequest], None] = _closed

    def attach(self, submit: Submit | None,
               submit_nowait: Callable[[WriteRequest], None] | None = None) -> None:
        """Say how write requests reach the writer's mailbox (``None``: detached).

        *submit* blocks while the mailbox is full; *submit_nowait* raises ``trio.WouldBlock``
        instead (it saves a scheduler round trip per write when there is room).
        """
        self._submit = submit
        if submit is None:
            self._submit_nowait = _closed
        else:
            self._submit_nowait = submit_nowait or _always_would_block

    async def commit(self, ops: Sequence[Op], *,
                     on_commit: Callable[[list[Any]], None] | None = None,
                     on_error: Callable[[BaseException], None] | None = None) -> list[Any]:
        """Write *ops* in one transaction (group-committed with others); return per-op results.

        Returns only once the transaction is durable. If the caller is cancelled while waiting,
        the write may still commit. Whatever happens to the caller, exactly one callback runs
        (sync): ``on_commit(results)`` once the transaction is durable, or ``on_error(error)``
        when it will not commit (it failed, or never reached the writer), or when the writer
        cannot know (the error, a :class:`StoreError`, then says it "may or may not have
        committed": a writer process that died before answering, an op of its batch that ran
        ``COMMIT`` itself). Raises :class:`StoreClosedError` when no writer is attached,
        :class:`ConflictError` on an integrity violation (nothing of this request is written),
        :class:`ValidationError` naming ``ops`` when they are no list of ops (one op not in a
        list, a generator: it fails alone), :class:`StoreError` otherwise (nothing of it is
        written, unless it says "may or may not have committed").
        """
        request = WriteRequest(ops, on_commit, on_error)
        try:
            await trio.lowlevel.checkpoint_if_cancelled()
            try:
                self._submit_nowait(request)
            except trio.WouldBlock:
                assert self._submit is not None
                await self._submit(request)
        except _WRITER_CLOSED as exc:
            error = StoreClosedError("the store's writer is closed")
            request.finish(None, error)
            raise error from exc
        except BaseException as exc:  # cancelled, or closed, before the writer had it
            request.finish(None, exc if isinstance(exc, StoreError) else StoreError(
                "this write never reached the writer"))
            raise
        return await request.wait()

    def commit_nowait(self, ops: Sequence[Op], *, on_commit: Callable[[list[Any]], None],
                      on_error: Callable[[BaseException], None]) -> None:
        """Hand *ops* to the writer without waiting; exactly one of the callbacks runs later,
        in the writer's task: ``on_commit(results)`` once the transaction is durable, or
        ``on_error(error)`` if it failed (nothing of it was written) or the writer cannot know
        (as for :meth:`commit`: the error says it "may or may not have committed").

        Sync. Raises ``trio.WouldBlock`` when the writer's mailbox is full (then nothing was
        handed over: use :meth:`commit`), :class:`StoreClosedError` when no writer is attached.
        """
        try:
            self._submit_nowait(WriteRequest(ops, on_commit, on_error))
        except _WRITER_CLOSED as exc:
            raise StoreClosedError("the store's writer is closed") from exc

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on a read-only connection in a worker thread."""
        return await self.readers.run(fn, *args)

    def statistics(self) -> WriterStatistics:
        """The writer's frozen :class:`WriterStatistics` snapshot. Never blocks."""
        return self.writer.statistics()

    def close(self) -> None:
        """Detach the writer and close the read pool: a later commit or read raises
        :class:`StoreClosedError`. Never blocks."""
        self.attach(None)
        self.readers.close()


_WRITER_CLOSED = (trio.ClosedResourceError, trio.BrokenResourceError, MailboxClosedError)
"""What a closed writer mailbox raises; :meth:`Store.commit` and ``commit_nowait`` turn it into
:class:`StoreClosedError`."""


def _always_would_block(request: WriteRequest) -> None:
    raise trio.WouldBlock


def _closed(request: WriteRequest) -> None:
    raise StoreClosedError("the store's writer is not running")


async def prepare_store(path: str | os.PathLike[str], *, synchronous: Synchronous = "FULL",
                        readers: int = 4, max_batch: int = 512, writer: Executor = "thread",
                        clock: Callable[[], float] = time.time) -> Store:
    """Create or migrate the database at *path* and register this process's epoch.

    *writer* says where batches commit: ``"thread"`` (a worker thread of this process) or
    ``"process"`` (a child process, so the SQLite work runs beside the event loop instead of
    taking turns with it for the GIL; see ``_writer_process``).

    The returned store's writer is not running: run ``store.writer.serve(mailbox)`` and
    ``store.attach(send)``, or use :func:`open_store`, which does both.

    A bad argument (a *path* that is no non-empty path, a *synchronous* other than ``"FULL"``
    or ``"NORMAL"``, *readers* or *max_batch* not an int >= 1, a *clock* that is not callable
    or does not return unix seconds from 0 to :data:`MAX_TIME`: it is called once to see)
    raises :class:`ValidationError` naming it before anything is created. A path it cannot
    use (not a database, newer, a folder or file the system will not make) raises
    :class:`StoreError` naming it.
    """
    check_executor(writer, "writer")
    _check_options(path=path, synchronous=synchronous, readers=readers, max_batch=max_batch,
                   clock=clock)
    try:
        db = await trio.to_thread.run_sync(prepare_path, path)
    except OSError as exc:  # a folder it cannot make or a file it cannot create (read-only,
        where = f" ({exc.filename})" if exc.filename is not None else ""  # full, a file)
        raise StoreError(f"cannot open the database {os.fspath(path)}: "
                         f"{exc.strerror or exc}{where}") from exc
    epoch = await trio.to_thread.run_sync(_register_epoch, db, synchronous, clock())
    return Store(db, epoch=epoch, writer=StoreWriter(db, synchronous=synchronous,
                                                     max_batch=max_batch, executor=writer),
                 readers=ReadPool(db, size=readers), clock=clock)


def _check_options(*, path: object, synchronous: object, readers: object, max_batch: object,
                   clock: object, mailbox_size: object = 0) -> None:
    """Refuse a bad option by name (:class:`ValidationError`), before anything is created:
    checked later, where each is used, they failed after the database file was made and an
    epoch registered, naming another name (``size``, ``max_buffer_size``) or none. *clock*
    is called once (as ``open_runtime`` does): what it returns is stored as every time."""
    check_path("path", path)
    check_synchronous(synchronous, "synchronous")
    for field, value, least in (("readers", readers, 1), ("max_batch", max_batch, 1),
                                ("mailbox_size", mailbox_size, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValidationError(field, f"must be an int >= {least}, got {value!r:.80}")
    check_clock(clock)


def check_clock(clock: object) -> None:
    """Refuse by name (:class:`ValidationError`, ``clock``) a *clock* that is not callable or
    does not return unix seconds from 0 to :data:`MAX_TIME` (a bool, NaN or inf neither): its
    times are stored, so it is called once here rather than found out at the first write."""
    if not callable(clock):
        raise ValidationError("clock", f"must be a callable returning unix seconds, got "
                                       f"{clock!r:.80}")
    now = clock()
    if isinstance(now, bool) or not isinstance(now, int | float) or not 0 <= now <= MAX_TIME:
        raise ValidationError("clock", f"must return unix seconds from 0 to {MAX_TIME} (year "
                                       f"9999), returned {now!r:.80}")


def _register_epoch(db: os.PathLike[str], synchronous: Synchronous, now: float) -> int:
    """Migrate the database and register this process's epoch. SQLite's own errors (a file
    that is not a database, a disk I/O error) are a :class:`StoreError` saying which file."""
    try:
        conn = connect_writer(db, synchronous)  # type: ignore[arg-type]
        try:
            migrate(conn, str(db))
            conn.execute("BEGIN IMMEDIATE")
            cursor = conn.execute(
                "INSERT INTO process_epochs (pid, hostname, started_at) VALUES (?, ?, ?)",
                (os.getpid(), socket.gethostname(), now))
            conn.execute("COMMIT")
            return int(cursor.lastrowid or 0)
        finally:
            conn.close()
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot open the database {os.fspath(db)}: {exc}") from exc


@asynccontextmanager
async def open_store(path: str | os.PathLike[str], *, synchronous: Synchronous = "FULL",
                     readers: int = 4, max_batch: int = 512, mailbox_size: int = 1024,
                     writer: Executor = "thread",
                     clock: Callable[[], float] = time.time) -> AsyncIterator[Store]:
    """Open the store with its writer running in a nursery of its own.

    On exit the writer commits what is already in its mailbox, then closes. Bad arguments
    are refused as by :func:`prepare_store` (and a *mailbox_size* not an int >= 0).
    """
    _check_options(path=path, synchronous=synchronous, readers=readers, max_batch=max_batch,
                   clock=clock, mailbox_size=mailbox_size)
    store = await prepare_store(path, synchronous=synchronous, readers=readers,
                                max_batch=max_batch, writer=writer, clock=clock)
    send, receive = trio.open_memory_channel[WriteRequest](mailbox_size)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(store.writer.serve, receive)
            store.attach(send.send, send.send_nowait)
            try:
                yield store
            finally:
                store.attach(None)
                send.close()
    except BaseExceptionGroup as group:
        error = collapse(group)
    else:
        error = None
    finally:
        send.close()
        _dead_letter_buffered(store, receive)
        receive.close()
        store.close()
    if error is not None:
        raise error


def _dead_letter_buffered(store: Store, receive: trio.MemoryReceiveChannel[WriteRequest]
                          ) -> None:
    """Answer requests still buffered when the writer is gone (it died, or was cancelled):
    each hears :class:`StoreError`, so every caller and callback learns its write did not
    happen. Sync."""
    error = StoreClosedError("the store's writer stopped before taking this write")
    while True:
        try:
            request = receive.receive_nowait()
        except (trio.WouldBlock, trio.EndOfChannel, trio.ClosedResourceError):
            return
        store.writer.dead_letter(request, error)
