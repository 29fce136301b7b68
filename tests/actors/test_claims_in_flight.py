"""What an unbind or an ``abandon_unacked`` does to a row already claimed for the route.

A claimed row (``sending``, durable) belongs to the route it was claimed for once no other is
bound: ``sending`` never becomes ``unrouted``, so a route unbound while the claim was being
written still gets that row, exactly as it would had its ``deliver()`` already started (the
host cannot tell the two apart). ``abandon_unacked`` settles the rows the route has returned
from ``deliver()`` and not had acked; a row whose ``deliver()`` still runs is left to that call.
Pinning tests: they passed before (see the docstrings of ``unbind`` and ``abandon_unacked``).
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


async def test_a_route_unbound_while_a_claim_as_written_commits_still_gets_that_row(
        rt, db_path) -> None:
    """A send written already claimed for the bound route (the session was idle) whose write
    commits after ``unbind``: the route gets it and it is ``sent``; the next send, written
    after the unbind, is ``unrouted``."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    token = rt.router.bind(session_id, route)
    handles = {}
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                async def send() -> None:
                    handles["x"] = await ctx.output.send_text("x")

                nursery.start_soon(send)
                await trio.testing.wait_all_tasks_blocked()  # x's write waits behind the gate
                assert rt.router.unbind(token) is True
                gate.release()
            assert await handles["x"].wait() == "delivered"
            later = await ctx.output.send_text("later")
            assert await later.wait() == "unrouted"
    assert route.texts() == ["x"]
    assert _events(db_path, handles["x"].delivery_id) == [
        "delivery.queued", "delivery.sending", "delivery.sent"]


async def test_a_route_unbound_while_its_lane_writes_a_claim_still_gets_that_row(
        rt, db_path) -> None:
    """As above for a claim its lane writes (the session was busy): the row claimed while
    the route was bound goes to it; the row behind it finds no route."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.stall()
    token = rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("first")
            await route.wait_attempted(1)  # the lane is inside deliver(first)
            second = await ctx.output.send_text("second")
            async with writer_gate(rt.store) as gate:
                route.release()  # first's sent and second's claim queue behind the gate
                await trio.testing.wait_all_tasks_blocked()
                rt.router.unbind(token)
                gate.release()
            third = await ctx.output.send_text("third")
            assert [await h.wait() for h in (first, second, third)] == [
                "delivered", "delivered", "unrouted"]
    assert route.texts() == ["first", "second"]


async def test_abandon_unacked_leaves_a_row_whose_deliver_runs_to_that_call(
        rt, db_path) -> None:
    """An acking route's ``deliver()`` is running when the host abandons the unacked rows:
    that row is not among them (it is not unacked yet) and stays ``sending``. Once deliver()
    returns it is unacked; the next ``abandon_unacked`` makes it ``unknown``, and a late ack
    ``sent``: one attempt, each state once, never ``sent`` before ``unknown``."""
    session_id = await rt.create_session(channel="gateway")
    route = MemoryRoute(ack_window=4)
    route.stall()
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("x")
        await route.wait_attempted(1)
        assert await rt.abandon_unacked(session_id) == []
        assert (await rt.delivery_status(handle.delivery_id)).outbox_status == "sending"
        route.release()
        await route.wait_delivered(1)
        await trio.testing.wait_all_tasks_blocked()
        assert (await rt.delivery_status(handle.delivery_id)).outbox_status == "sending"
        assert await rt.abandon_unacked(session_id) == [handle.delivery_id]
        assert await handle.wait() == "unknown"
        assert await rt.confirm([handle.delivery_id]) == [handle.delivery_id]
    assert len(route.attempted) == 1
    assert _events(db_path, handle.delivery_id) == [
        "delivery.queued", "delivery.sending", "delivery.unknown", "delivery.sent"]
