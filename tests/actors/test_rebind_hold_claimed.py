"""A row already claimed for one route when another route's binder hands older rows back.

A binder that re-queues a session's older ``unrouted`` rows binds inside ``rt.hold_binds``
(a gateway client's hello, a channel's hand-back), so nothing newer of the session reaches its
route before them. A row claimed for the route bound before (``sending``, its platform I/O not
started) is handed back too, after them: ``unknown`` then ``queued`` in one write (provably not
on the platform, as a reconciling channel would re-queue it), and its lane reads it again in
seq order. Without a hold, the last bind wins as before (test_hunt_design_transitions.py).
"""

from __future__ import annotations

import pathlib

import trio
import trio.testing

from tidings.testing import MemoryRoute, writer_gate

from .conftest import rows

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works."""


def _events(db_path: pathlib.Path, delivery_id: str) -> list[str]:
    return [kind for (kind,) in rows(db_path, "SELECT type FROM events WHERE delivery_id = ? "
                                              "ORDER BY event_seq", delivery_id)]


async def _hand_back(rt, session_id: str) -> None:
    """What a binder does inside its hold (``channels/_handback.py``): re-queue the session's
    ``unrouted`` rows, once no ``unrouted`` write of it is in flight."""
    await rt.unrouted_written(session_id)
    stored = await rt.stored_deliveries(session_id, statuses=("unrouted",))
    await rt.requeue(session_id, [row.outbound.delivery_id for row in stored])


async def _unrouted(rt, session_id: str, ctx) -> object:
    handle = await ctx.output.send_text("older")  # no route bound: unrouted
    assert await handle.wait() == "unrouted"
    return handle


async def test_a_row_claimed_as_written_for_the_old_route_goes_after_the_handed_back_rows(
        rt, db_path) -> None:
    """Route A is bound (by a host that hands nothing back) to a session with an older
    ``unrouted`` row; a send is written already claimed for A; before it commits, B binds
    inside a hold and hands the older row back. B gets the older row, then the newer one."""
    session_id = await rt.create_session(channel="web")
    old, new = MemoryRoute(), MemoryRoute()
    handles = {}
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            older = await _unrouted(rt, session_id, ctx)
            rt.router.bind(session_id, old)
            async with trio.open_nursery() as nursery, writer_gate(rt.store) as gate:
                async def send() -> None:
                    handles["newer"] = await ctx.output.send_text("newer")

                nursery.start_soon(send)
                await trio.testing.wait_all_tasks_blocked()  # written claimed, gated
                async with rt.hold_binds(new):
                    rt.router.bind(session_id, new)
                    gate.release()
                    await _hand_back(rt, session_id)
            assert await handles["newer"].wait() == "delivered"
            await new.wait_delivered(2)
        assert (await rt.delivery_status(older.delivery_id)).status == "sent"
    assert new.texts() == ["older", "newer"]
    assert old.attempted == []
    assert _events(db_path, handles["newer"].delivery_id) == [
        "delivery.queued", "delivery.sending", "delivery.unknown", "delivery.requeued",
        "delivery.sending", "delivery.sent"]


async def test_a_row_its_lane_claimed_for_the_old_route_goes_after_the_handed_back_rows(
        rt, db_path) -> None:
    """As above for a row its lane claims (the session was busy with another row): the claim
    commits while B's binder holds the session, and the row goes out after the older one."""
    session_id = await rt.create_session(channel="web")
    old, new = MemoryRoute(), MemoryRoute()
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            older = await _unrouted(rt, session_id, ctx)
            old.stall()
            rt.router.bind(session_id, old)
            first = await ctx.output.send_text("first")
            await old.wait_attempted(1)  # the lane is inside deliver(first)
            newer = await ctx.output.send_text("newer")
            async with writer_gate(rt.store) as gate:
                old.release()  # first's sent and newer's claim queue behind the gate
                await trio.testing.wait_all_tasks_blocked()
                async with rt.hold_binds(new):
                    rt.router.bind(session_id, new)
                    gate.release()
                    await _hand_back(rt, session_id)
            assert [await h.wait() for h in (first, newer)] == ["delivered"] * 2
            await new.wait_delivered(2)
        assert (await rt.delivery_status(older.delivery_id)).status == "sent"
    assert old.texts() == ["first"]
    assert new.texts() == ["older", "newer"]
