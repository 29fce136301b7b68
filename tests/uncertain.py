"""Make the writer answer one batch "may or may not have committed" although it committed, as a
writer process killed between its commit and its answer does, deterministically.

The writer's thread is held inside a batch (:func:`tidings.testing.writer_gate`); the write
under test is queued behind it, so it goes in the next batch; an op of that same batch then
runs ``COMMIT`` itself, which commits what the batch wrote and leaves the writer unable to tell
its callers so.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import AsyncIterator
from typing import Any

import trio

from tidings.store import Call
from tidings.testing import WriterGate, writer_gate

__all__ = ["UncertainBatch", "uncertain_batch"]


def _ignore(_: object) -> None:
    pass


def _ends_the_transaction(conn: sqlite3.Connection) -> None:
    conn.execute("COMMIT")  # commits what its batch wrote, then the batch cannot tell


class UncertainBatch:
    """The held writer of :func:`uncertain_batch`."""

    def __init__(self, rt: Any, gate: WriterGate) -> None:
        self._rt = rt
        self._gate = gate
        self._commit = rt.store.commit
        self._handed = trio.Event()

    async def _noting(self, ops: Any, **kwargs: Any) -> Any:
        self._handed.set()  # in the writer's mailbox before the committing task next yields
        return await self._commit(ops, **kwargs)

    async def wait_handed(self) -> None:
        """Return once the next ``rt.store.commit`` call (the write under test: whatever it
        reads comes before) has handed its write to the held writer."""
        await self._handed.wait()
        self._rt.store.commit = self._commit

    def answer_uncertain(self) -> None:
        """Put the ``COMMIT`` op in that write's batch and let the writer go on."""
        self._rt.store.commit_nowait([Call(_ends_the_transaction)], on_commit=_ignore,
                                     on_error=_ignore)
        self._gate.release()


@contextlib.asynccontextmanager
async def uncertain_batch(rt: Any) -> AsyncIterator[UncertainBatch]:
    """Hold *rt*'s writer thread inside a batch and note the next ``rt.store.commit`` call; see
    the module docstring. On leaving, the writer goes on in any case (nothing waits for ever)."""
    async with writer_gate(rt.store) as gate:
        batch = UncertainBatch(rt, gate)
        rt.store.commit = batch._noting
        try:
            yield batch
        finally:
            rt.store.commit = batch._commit
