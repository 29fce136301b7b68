"""Holes left around a claimed row's hold check (``LaneWorker._still_next``).

A row claimed for one route waits, before its platform I/O, for a binder that holds its
session (``rt.hold_binds``), and goes back behind the rows that binder handed back. Every
``await`` between that check and ``deliver()`` is a window where a new hold could begin: the
lane must look again after it, or the newer row overtakes the handed-back ones.
"""

from __future__ import annotations

import functools
import pathlib

import trio
import trio.testing

from tidings.store import InsertRows, queries
from tidings.testing import MemoryRoute, writer_gate

from .conftest import rows, stalled_session

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works."""

CHART = "https://example.com/chart.png"


def _events(db_path: pathlib.Path, delivery_id: str) -> list[str]:
    return [kind for (kind,) in rows(db_path, "SELECT type FROM events WHERE delivery_id = ? "
                                              "ORDER BY event_seq", delivery_id)]


def _gate_degraded_events(rt) -> tuple[trio.Event, trio.Event]:
    """Wrap ``rt.store.commit``: a write of a lone ``delivery.degraded`` event (what the lane
    records for a re-bound row before its ``deliver()``) sets *handed* and then waits for
    *go* before it reaches the writer. Returns ``(handed, go)``."""
    real_commit = rt.store.commit
    handed, go = trio.Event(), trio.Event()

    async def commit(ops, **kwargs):
        if len(ops) == 1 and isinstance(ops[0], InsertRows) and ops[0].table == "events":
            handed.set()
            await go.wait()
        return await real_commit(ops, **kwargs)

    rt.store.commit = commit
    return handed, go


async def _written_claimed(rt, session_id: str) -> None:
    """Return once a send of *session_id* is being written already claimed (its lane is
    reserved for it; a media send checks its sources in a worker thread first, which
    ``wait_all_tasks_blocked`` does not wait for)."""
    while True:
        lane = rt.dispatcher.lane(session_id)
        if lane is not None and lane.reserved:
            return
        await trio.testing.wait_all_tasks_blocked()


async def _hand_back(rt, session_id: str) -> None:
    """What a binder does inside its hold (``channels/_handback.py``)."""
    await rt.unrouted_written(session_id)
    stored = await rt.stored_deliveries(session_id, statuses=("unrouted",))
    await rt.requeue(session_id, [row.outbound.delivery_id for row in stored])


async def test_a_hold_that_begins_while_the_lane_records_a_reroute_still_holds_the_row(
        rt) -> None:
    """An image claimed (written claimed) for a text-only route A, re-bound to an image route B
    before its platform I/O: the lane records a degraded event naming B. While that write is
    in flight, C binds inside a hold and hands an older ``unrouted`` row back. C must get the
    older row first: the image waits for the hold and goes back behind it."""
    session_id = await rt.create_session(channel="web")
    a = MemoryRoute()
    b, c = (MemoryRoute(capabilities={"text", "image"}) for _ in range(2))
    handles = {}
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            older = await ctx.output.send_text("older")  # no route bound: unrouted
            assert await older.wait() == "unrouted"
            rt.router.bind(session_id, a)
            handed, go = _gate_degraded_events(rt)
            async with trio.open_nursery() as nursery:
                async with writer_gate(rt.store) as gate:
                    async def send() -> None:
                        handles["image"] = await ctx.output.send_image(
                            CHART, caption="chart", history_policy="transient")

                    nursery.start_soon(send)
                    await _written_claimed(rt, session_id)  # for A, behind the gate
                    rt.router.bind(session_id, b)  # before the claim commits: no hold
                    gate.release()
                await handed.wait()  # the lane records that B gets the image, then delivers
                async with rt.hold_binds(c):
                    rt.router.bind(session_id, c)
                    go.set()
                    await _hand_back(rt, session_id)
            assert await handles["image"].wait() == "delivered"
            await c.wait_delivered(2)
    assert [outbound.text for outbound in c.delivered] == ["older", "chart"]
    assert a.attempted == []
    assert b.attempted == []


async def test_a_kick_that_hands_nothing_back_leaves_a_claimed_row_to_go_out(rt, db_path) -> None:
    """A kick (a stranded-row scan, ``recover()``) makes a busy lane re-read the store; when
    no row older than the one it claimed was handed back, that row is still the session's next
    and goes out as claimed: no ``unknown``/``requeued`` detour, no second attempt, no error
    saying older rows were handed back."""
    session_id, route = await stalled_session(rt)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("first")
            await route.wait_attempted(1)  # the lane is inside deliver(first)
            second = await ctx.output.send_text("second")
            async with writer_gate(rt.store) as gate:
                route.release()  # first's sent and second's claim queue behind the gate
                await trio.testing.wait_all_tasks_blocked()
                rt.dispatcher.kick(session_id)  # as the recovery scanner does
                gate.release()
            assert [await h.wait() for h in (first, second)] == ["delivered"] * 2
    assert route.texts() == ["first", "second"]
    assert [outbound.attempt for outbound in route.delivered] == [1, 1]
    assert _events(db_path, second.delivery_id) == [
        "delivery.queued", "delivery.sending", "delivery.sent"]
    [(error,)] = rows(db_path, "SELECT last_error FROM outbox WHERE delivery_id = ?",
                      second.delivery_id)
    assert error is None


async def test_a_kick_while_the_lane_reads_its_queued_rows_is_not_forgotten(rt) -> None:
    """A kick (a hand-back, a stranded-row scan) while the lane's refill reads the store: the
    read may have missed what the kick re-queued, so the lane reads again. It took the empty
    read for "caught up" and left the kick's ``rewind`` set with nothing to read: the next send
    was posted to the lane, dropped there as "read again from the store", and never read (it
    stayed ``queued`` until a stranded-row scan, a minute later by default). No route is
    bound, so the send is not written already claimed: it goes through the lane's mailbox."""
    session_id = await rt.create_session(channel="web")
    real_read = rt.store.read
    reading, go, read = trio.Event(), trio.Event(), trio.Event()

    async def paused_read(fn, *args, **kwargs):
        refill = isinstance(fn, functools.partial) and fn.func is queries.open_outbox_rows
        if refill and not reading.is_set():
            reading.set()
            await go.wait()
            try:
                return await real_read(fn, *args, **kwargs)
            finally:
                read.set()  # the refill goes on from here without a checkpoint
        return await real_read(fn, *args, **kwargs)

    rt.store.read = paused_read
    with trio.fail_after(HANG):
        rt.dispatcher.kick(session_id)  # the lane reads the session's queued rows: none
        await reading.wait()
        rt.dispatcher.kick(session_id)  # again, while that read is in flight
        go.set()
        await read.wait()
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("after the kicks")
            assert await handle.wait() == "unrouted"
