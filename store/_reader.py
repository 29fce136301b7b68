"""Reads on read-only connections in worker threads, so the event loop never blocks on SQLite.

A bounded :class:`trio.CapacityLimiter` caps the threads; each thread borrows a connection from
the pool for one call and gives it back. Each call runs in one read transaction, so a function
that issues several queries sees one consistent snapshot.
"""

from __future__ import annotations

import collections
import pathlib
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar

import trio

from tidings.store._batch import map_error
from tidings.store._connect import checkpoint, connect_reader
from tidings.store._errors import StoreClosedError

__all__ = ["ReadPool"]

T = TypeVar("T")


class ReadPool:
    """A pool of read-only connections to *path*, at most *size* in use at once."""

    def __init__(self, path: pathlib.Path, *, size: int = 4) -> None:
        if size < 1:
            raise ValueError(f"size: must be at least 1, got {size}")
        self.path = path
        self._limiter = trio.CapacityLimiter(size)
        self._idle: collections.deque[sqlite3.Connection] = collections.deque()
        self._closed = False

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` in a worker thread inside one read transaction (one that
        *fn* ends itself, with ``conn.commit()`` say, is not an error: its queries after that
        just see later commits).

        Always a checkpoint. Raises :class:`StoreClosedError` after :meth:`close`, and driver
        errors mapped to the tidings taxonomy (that connection is then closed, not reused);
        whatever else *fn* raises is raised as it is, and its connection kept.
        """
        if self._closed:
            raise StoreClosedError("the store is closed")
        return await trio.to_thread.run_sync(self._run, fn, args, limiter=self._limiter)

    async def wait_idle(self) -> None:
        """Wait until every read started before this call has ended, those still waiting for
        a thread included (the limiter serves first come, first served; reads started
        meanwhile wait behind this call, briefly). For a check that needs every reader's
        answer taken in: a task waiting for a read is blocked as far as trio can see
        (``wait_all_tasks_blocked`` returns with the read still running). Always a
        checkpoint."""
        limiter = self._limiter
        held: list[object] = []
        try:
            for _ in range(int(limiter.total_tokens)):
                borrower = object()
                await limiter.acquire_on_behalf_of(borrower)
                held.append(borrower)
        finally:
            for borrower in held:
                limiter.release_on_behalf_of(borrower)

    def _run(self, fn: Callable[..., T], args: tuple[Any, ...]) -> T:
        if self._closed:  # closed while this call waited for a thread: open nothing new
            raise StoreClosedError("the store is closed")
        try:
            conn = self._idle.pop()
        except IndexError:
            try:
                conn = connect_reader(self.path)
            except sqlite3.Error as exc:  # the file is gone, or unreadable: a StoreError too
                raise map_error(exc) from exc
        healthy = False
        try:
            conn.execute("BEGIN")
            try:
                result = fn(conn, *args)
            finally:
                if conn.in_transaction:  # fn may have ended it (conn.commit() out of habit)
                    conn.execute("ROLLBACK")
            healthy = True
            return result
        except sqlite3.Error as exc:  # the connection itself may be bad: it is not kept
            raise map_error(exc) from exc
        except Exception:  # fn's own (a bad argument refused inside the read): ROLLBACK ran,
            healthy = True  # so the connection is as good as before; keep it, cache and all
            raise
        finally:
            if healthy and not self._closed:
                self._give_back(conn)
            else:
                conn.close()
            if self._closed:
                # This read was in flight when the store closed: its snapshot may have held
                # back the writer's last checkpoint (see close_writer), which copies the log
                # only up to the oldest snapshot a reader holds, leaving the last commits out
                # of the database file. Read-only, this connection could not make it: copy now.
                checkpoint(self.path)

    def _give_back(self, conn: sqlite3.Connection) -> None:
        """Put *conn* back in the pool, or close it if :meth:`close` ran meanwhile.

        :meth:`close` (in the trio thread) can run between this thread's check of ``_closed``
        and its append: it then found the pool empty, and the connection appended after it
        stayed open for good. So look again after appending; whichever side takes the
        connection out of the deque (both ``pop`` and ``remove`` are atomic) closes it.
        """
        self._idle.append(conn)
        if self._closed:
            try:
                self._idle.remove(conn)
            except ValueError:  # close() took it, and closes it
                return
            conn.close()

    def close(self) -> None:
        """Close idle connections; connections in use close when their call ends.

        Afterwards no connection stays open once the calls in flight have ended, and a call
        not yet running (:meth:`run` after this, or one still waiting for a thread) raises
        :class:`StoreClosedError`. Each call in flight copies the write-ahead log into the
        database file as it ends (its snapshot may have held the writer's copy back).
        """
        self._closed = True
        while self._idle:
            try:
                conn = self._idle.pop()
            except IndexError:  # a returning call took its own back (see _give_back)
                return
            conn.close()

