"""A lane's terminal write (``sent``, ``failed``) that the writer answers "may or may not have
committed" although it committed, and whose row a prune deletes before the lane reads it back.

The lane waits out the refused write (a backoff on trio's clock, held here by ``mock_clock``)
and writes the move again; that move finds the row moved on, so the lane reads the row back to
resolve the handle with its durable terminal state. The prune deleted it meanwhile (it was
final, ``sent`` or ``failed``: a prune deletes nothing else), the read found nothing, and
nothing ever resolved the handle: ``handle.wait()`` waited for good. A row gone was final, and
the move the lane wrote is what most likely made it so: the handle reports that move's
outcome. ``sent`` rode on the next claim and is written again as it was: ``"delivered"``. A
refused ``failed`` write is settled as a claimed row is after a crash, with ``unknown`` (the
platform may have it; also what the row becomes when that write did not commit): gone, the
row reports ``"unknown"``, never an outcome the lane did not write.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
import trio.testing

import tidings
from tidings.errors import DeliveryNotFoundError, StoreError
from tidings.store import queries
from tidings.testing import MemoryRoute

from ..real_time import fail_after_real
from ..uncertain import uncertain_batch


class _Clock:
    """The store's clock (unix seconds), moved by the test: a row's stamp is then surely
    older than a prune's cutoff taken after :meth:`advance`."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self) -> None:
        self.now += 10.0


@contextlib.asynccontextmanager
async def _terminal_write_answered_uncertain(rt, route: MemoryRoute, move: str
                                             ) -> AsyncIterator[tuple[Any, Any]]:
    """In a turn of a new session bound to *route*: a first send whose terminal write
    (``sent``, or ``failed`` when *route* refuses) the writer answers "may or may not have
    committed" although it committed; with *move* ``"sent"`` also a second send, whose claim
    carries that write. Yields both handles (the second None for ``"failed"``) in the turn."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    route.stall()
    async with rt.open_turn(session_id) as ctx:
        first = await ctx.output.send_text("first")
        await route.wait_attempted(1)
        # "sent": the lane's next claim carries first's ``sent`` in its write.
        later = await ctx.output.send_text("second") if move == "sent" else None
        async with uncertain_batch(rt) as batch:
            route.release()  # first's terminal write goes to the held writer
            await batch.wait_handed()
            batch.answer_uncertain()
        yield first, later


@pytest.mark.parametrize("move", ["sent", "failed"])
async def test_a_handle_whose_row_was_pruned_after_an_uncertain_write_resolves(
        db_path, workspace, mock_clock, move) -> None:
    clock = _Clock()
    route = MemoryRoute(fail=ConnectionError("refused") if move == "failed" else None)
    with fail_after_real(10):  # the hang guard (trio's clock stands still here)
        async with (tidings.open_runtime(db_path, workspace=workspace, clock=clock,
                                         scan_interval=3600) as rt,
                    _terminal_write_answered_uncertain(rt, route, move) as (first, later)):
            # Once the writer has taken that batch, the lane waits out the refused write
            # (trio's clock does not move) and the prune is written in a batch of its own.
            await trio.testing.wait_all_tasks_blocked()
            clock.advance()
            report = await rt.prune(older_than=0)
            assert report.deliveries == 1  # first's row, final, is gone
            with pytest.raises(DeliveryNotFoundError):
                await rt.delivery_status(first.delivery_id)
            mock_clock.jump(STORE_RETRY)  # the lane writes again
            expected = "delivered" if move == "sent" else "unknown"
            assert await first.wait() == expected
            if later is not None:  # sent back (its claim was refused), then delivered
                assert await later.wait() == "delivered"


STORE_RETRY = 60.0  # past the lane's backoff after a refused write (0.1 s doubling to 30 s)


@pytest.mark.parametrize("move", ["sent", "failed"])
async def test_a_refused_read_back_is_read_again_after_the_backoff(
        db_path, workspace, autojump_clock, move) -> None:
    """The read-back itself refused (a disk I/O error): the lane waits that out too and reads
    the row again, so the handle still gets the row's durable state, not a wait for good."""
    route = MemoryRoute(fail=ConnectionError("refused") if move == "failed" else None)
    with fail_after_real(10):  # the hang guard (in real seconds: the writer is held)
        async with (tidings.open_runtime(db_path, workspace=workspace,
                                         scan_interval=3600) as rt,
                    _terminal_write_answered_uncertain(rt, route, move) as (first, later)):
            read, refused = rt.store.read, []

            async def refusing(fn, *args):
                if fn is queries.delivery and not refused:
                    refused.append(args)
                    raise StoreError("disk I/O error")
                return await read(fn, *args)

            rt.store.read = refusing
            # A backoff after the refused write, another after the refused read.
            assert await first.wait() == ("delivered" if move == "sent" else "failed")
            rt.store.read = read
            assert refused  # the read-back was refused once, and read again
            if later is not None:
                assert await later.wait() == "delivered"


async def test_an_unrouted_write_answered_uncertain_resolves_its_handle(
        db_path, workspace, autojump_clock) -> None:
    """A row its lane finds with no route is written ``unrouted``; that write answered "may or
    may not have committed" although it committed left the handle unresolved for good: the
    lane held no claim on the row (nothing to settle) and reads back only ``queued`` rows.
    Now it reads the row back, as for a claim the store refused: ``"unrouted"``."""
    route = MemoryRoute()
    with fail_after_real(10):  # the hang guard (in real seconds: the writer is held)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=3600) as rt:
            session_id = await rt.create_session(channel="web")
            token = rt.router.bind(session_id, route)
            route.stall()
            async with rt.open_turn(session_id) as ctx:
                zero = await ctx.output.send_text("zero")
                await route.wait_attempted(1)
                first = await ctx.output.send_text("first")  # queued behind "zero"
                rt.router.unbind(token)  # "first" finds no route when its lane takes it
                async with uncertain_batch(rt) as batch:
                    route.release()  # zero's ``sent`` rides on first's ``unrouted`` write
                    await batch.wait_handed()
                    batch.answer_uncertain()
                assert await zero.wait() == "delivered"
                assert await first.wait() == "unrouted"
            assert (await rt.delivery_status(first.delivery_id)).status == "unrouted"
