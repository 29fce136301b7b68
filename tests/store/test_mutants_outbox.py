"""What the outbox's moves write beside the status, pinned where a mutation audit found no test.

Each test names the mutant of ``store/_outbox.py`` it kills (a change to the product no other
test noticed); each passes on the real code and failed with that change applied.
"""

from __future__ import annotations

import sqlite3

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from tidings.store import transition
from tidings.testing import MemoryRoute, writer_gate

HANG = 30.0
"""Real-time hang guard: these runtimes run on trio's real clock."""


async def test_a_terminal_move_ends_the_claims_lease_and_keeps_its_claimant(rt) -> None:
    """``sent``, ``failed`` and ``unknown`` clear ``lease_expires_at`` (nobody holds the row
    any more) and keep ``claimant`` and ``attempts`` for debugging. Mutant: a terminal move
    that left the lease set (the row read as still leased)."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            sent = await ctx.output.send_text("ok")
            assert await sent.wait() == "delivered"
            route.fail = ConnectionError("down")
            failed = await ctx.output.send_text("no")
            assert await failed.wait() == "failed"
    for handle in (sent, failed):
        status = await rt.delivery_status(handle.delivery_id)
        assert (status.lease_expires_at, status.claimant, status.attempts) == (
            None, rt.store.claimant, 1), status.outbox_status


async def test_an_abandoned_row_handed_back_loses_its_claim_and_keeps_its_error(
        rt, db_path) -> None:
    """An acking route's unacked row becomes ``unknown`` (lease cleared), and ``rt.requeue``
    takes it back to ``queued``: no claimant, no lease (nobody claims it until its lane does
    again), its ``last_error`` kept (a move without an error keeps the old one). Mutants: a
    requeue that left the old claimant (or lease) on a ``queued`` row, a move without an
    error that erased ``last_error``."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=2)
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("a")
            await route.wait_delivered(1)
            assert await rt.abandon_unacked(session_id) == [first.delivery_id]
            assert await first.wait() == "unknown"
            unknown = await rt.delivery_status(first.delivery_id)
            assert (unknown.outbox_status, unknown.lease_expires_at) == ("unknown", None)
            assert unknown.claimant == rt.store.claimant
            error = unknown.last_error
            assert error
            route.stall()  # the lane is busy with b while a is queued again
            await ctx.output.send_text("b")
            await route.wait_attempted(2)
            assert await rt.requeue(session_id, [first.delivery_id]) == [first.delivery_id]
            queued = await rt.delivery_status(first.delivery_id)
            assert (queued.outbox_status, queued.claimant, queued.lease_expires_at,
                    queued.last_error) == ("queued", None, None, error)
            route.release()
            await route.wait_delivered(3)
    again = await rt.delivery_status(first.delivery_id)
    assert (again.attempts, again.last_error) == (2, error)
    # The claim's answer carries the row's attempt count to the route. Mutant: the claim
    # answered attempt 1 whatever the row's count was.
    assert [o.attempt for o in route.delivered] == [1, 1, 2]
    # Its work item follows the row's claim (what an operator reads of the work queue).
    # Mutant: the work item's attempts left at the first claim's.
    conn = sqlite3.connect(db_path)
    try:
        work = conn.execute("SELECT status, attempts FROM work_items WHERE subject_id = ?",
                            (first.delivery_id,)).fetchall()
    finally:
        conn.close()
    assert work == [("claimed", 2)]


async def test_two_confirms_of_one_row_in_one_batch_report_it_moved_once(rt) -> None:
    """Two acks of the same row that the writer commits in one transaction (the gate holds
    it while both are handed over): the row moves once, so exactly one caller is told it
    moved, as when they commit one after the other. Mutant: a repeated move of one row in a
    batch answered "applied" for each."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=2)
    rt.router.bind(session_id, route)
    answers: list[list[str]] = []

    async def confirm(delivery_id: str) -> None:
        answers.append(await rt.confirm([delivery_id]))

    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("a")
            await route.wait_delivered(1)
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                nursery.start_soon(confirm, handle.delivery_id)
                nursery.start_soon(confirm, handle.delivery_id)
                await wait_all_tasks_blocked()
                gate.release()
    assert sorted(answers) == [[], [handle.delivery_id]]
    assert await handle.wait() == "delivered"
    assert (await rt.delivery_status(handle.delivery_id)).outbox_status == "sent"


def test_a_narrowed_move_must_name_legal_sources() -> None:
    """``only_from`` may only narrow the legal sources of the move: a source the state
    machine has no such move from is refused, naming the field. Mutant: the check dropped
    (the guard then allowed an illegal move, say ``queued`` straight to ``sent``)."""
    with pytest.raises(ValueError, match="only_from: 'queued' -> 'sent'"):
        transition("d", "sent", now=1.0, only_from=("queued",))
    with pytest.raises(ValueError, match="to: no transition into 'delivered'"):
        transition("d", "delivered", now=1.0)
    assert transition("d", "sent", now=1.0, only_from=("unknown",)).only_from == ("unknown",)


async def test_a_lanes_sent_and_an_ack_of_an_unknown_row_in_one_batch_both_apply(rt) -> None:
    """A lane's ``sent`` (only from ``sending``) and an ack (``sent`` from ``sending`` or
    ``unknown``) committed in one transaction: each keeps its own sources, so the ack of an
    ``unknown`` row still applies. Mutant: moves merged by target alone, the batch guarded by
    the first move's narrower sources (the ack was dropped: its row stayed ``unknown``)."""
    plain, acking = await rt.create_session(channel="web"), await rt.create_session(channel="web")
    route, acked = MemoryRoute(), MemoryRoute(ack_window=1)
    rt.router.bind(plain, route)
    rt.router.bind(acking, acked)
    moved: list[str] = []

    async def confirm(delivery_id: str) -> None:
        moved.extend(await rt.confirm([delivery_id]))

    with trio.fail_after(HANG):
        async with rt.open_turn(acking) as ctx:
            lost = await ctx.output.send_text("lost")
            await acked.wait_delivered(1)
            assert await rt.abandon_unacked(acking) == [lost.delivery_id]
        route.stall()
        async with rt.open_turn(plain) as ctx:
            sent = await ctx.output.send_text("x")
            await route.wait_attempted(1)
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                route.release()  # its lane hands ``sent`` to the held writer
                await wait_all_tasks_blocked()
                nursery.start_soon(confirm, lost.delivery_id)  # queued behind it
                await wait_all_tasks_blocked()
                gate.release()
            assert await sent.wait() == "delivered"
    assert moved == [lost.delivery_id]
    assert (await rt.delivery_status(lost.delivery_id)).outbox_status == "sent"
