"""A gate in the store's writer: hold its thread inside a transaction until released.

While the gate is closed every other write queues behind it, so a test can put an actor in
"waiting for my write" on purpose (and, say, cancel it there) without racing a worker thread.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from tidings.store import Call, Store
from tidings.store._groups import collapse

__all__ = ["WriterGate", "writer_gate"]


class WriterGate:
    """See :func:`writer_gate`. ``release()`` opens it (idempotent, from any thread)."""

    def __init__(self) -> None:
        self._entered = threading.Event()
        self._open = threading.Event()

    def _hold(self, conn: Any) -> None:
        self._entered.set()
        self._open.wait()

    def release(self) -> None:
        """Open the gate: the writer goes on (idempotent, from any thread)."""
        self._open.set()

    @property
    def released(self) -> bool:
        """Whether :meth:`release` was called."""
        return self._open.is_set()


@asynccontextmanager
async def writer_gate(store: Store) -> AsyncIterator[WriterGate]:
    """Close a gate in *store*'s writer; yield once the writer thread is held in it.

    Leaving the block releases it (if the body did not) and waits for the gate's own write to
    commit. A store that cannot commit (closed) raises its error before the block runs. An
    error of the block comes out as itself, as from any ``async with`` (a group only when the
    gate's write failed too). Usage::

        async with writer_gate(rt.store) as gate:
            ...            # every write now queues behind the gate
            gate.release()
    """
    gate = WriterGate()

    async def hold() -> None:
        try:
            await store.commit([Call(gate._hold)])
        finally:  # a commit that failed before the gate (a closed store) frees the wait below
            gate._entered.set()

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hold)
            try:
                await trio.to_thread.run_sync(gate._entered.wait, abandon_on_cancel=True)
                yield gate
            finally:
                gate.release()
    except BaseExceptionGroup as group:  # the nursery's wrapping: raised as itself, below
        error = collapse(group)
    else:
        return
    raise error
