"""DESIGN.md's durable state machines, checked move by move through the public API.

Each test drives one named transition of the outbox row (or of the in-memory item) and reads
the database to check the row, its ``delivery.send`` work item and the events the move appends
(exactly once, in order). Tests that must show something does not stay stuck wait under a
real-time hang guard (as in ``test_races.py``).
"""

from __future__ import annotations

import pathlib

import trio
import trio.testing

from tidings.testing import MemoryRoute, writer_gate

from .conftest import rows, stalled_session

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works."""


def _row(db_path: pathlib.Path, delivery_id: str) -> tuple[str, str, int]:
    """``(outbox status, work item status, attempts)`` of one delivery."""
    [found] = rows(db_path, "SELECT o.status, w.status, o.attempts FROM outbox AS o "
                            "JOIN work_items AS w ON w.work_id = o.work_id "
                            "WHERE o.delivery_id = ?", delivery_id)
    return found


def _events(db_path: pathlib.Path, delivery_id: str) -> list[str]:
    return [kind for (kind,) in rows(db_path, "SELECT type FROM events WHERE delivery_id = ? "
                                              "ORDER BY event_seq", delivery_id)]


async def test_requeue_moves_only_rows_of_the_session_it_names(rt, db_path) -> None:
    """``rt.requeue(session_id, ids)`` hands rows *of session_id* back to its lane. A row of
    another session is not moved (its lane is not the one kicked, and that session's channel
    never asked)."""
    mine = await rt.create_session(channel="web")
    other = await rt.create_session(channel="web")
    with trio.fail_after(HANG):
        async with rt.open_turn(other) as ctx:
            handle = await ctx.output.send_text("theirs")  # no route: unrouted
            assert await handle.wait() == "unrouted"
        assert await rt.requeue(mine, [handle.delivery_id]) == []
    assert _row(db_path, handle.delivery_id)[0] == "unrouted"
    assert _events(db_path, handle.delivery_id) == ["delivery.queued", "delivery.unrouted"]


async def test_a_delivery_claimed_as_written_goes_to_the_route_bound_when_it_is_delivered(
        rt, db_path) -> None:
    """The last bind wins: a send written already claimed (its session was idle) while route
    A was bound, and re-bound to route B before that write committed, is delivered to B, the
    route bound to its session when its platform I/O starts, not to the replaced A."""
    session_id = await rt.create_session(channel="web")
    old, new = MemoryRoute(), MemoryRoute()
    rt.router.bind(session_id, old)
    handles = {}
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                async def send() -> None:
                    handles["x"] = await ctx.output.send_text("x")

                nursery.start_soon(send)
                await trio.testing.wait_all_tasks_blocked()  # x's write waits behind the gate
                rt.router.bind(session_id, new)
                gate.release()
            assert await handles["x"].wait() == "delivered"
    assert [o.text for o in new.delivered] == ["x"]
    assert old.attempted == []


async def test_a_delivery_claimed_by_its_lane_goes_to_the_route_bound_when_it_is_delivered(
        rt, db_path) -> None:
    """As above for a delivery its lane claims (the session was busy): a re-bind while the
    claim is being written sends it to the new route."""
    session_id = await rt.create_session(channel="web")
    old, new = MemoryRoute(), MemoryRoute()
    old.stall()
    rt.router.bind(session_id, old)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("first")
            await old.wait_attempted(1)  # the lane is inside deliver(first)
            second = await ctx.output.send_text("second")  # queued behind it
            async with writer_gate(rt.store) as gate:
                old.release()  # first's sent and second's claim queue behind the gate
                await trio.testing.wait_all_tasks_blocked()
                rt.router.bind(session_id, new)
                gate.release()
            assert await first.wait() == "delivered"
            assert await second.wait() == "delivered"
    assert [o.text for o in old.delivered] == ["first"]
    assert [o.text for o in new.delivered] == ["second"]


async def test_terminal_rows_do_not_move_again_through_the_public_calls(rt, db_path) -> None:
    """``sent`` and ``failed`` never change: confirm, requeue and abandon_unacked leave them
    (and their work items and events) as they are. A pinning test: it passed before."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(fail=lambda outbound: RuntimeError("boom") if outbound.text == "bad"
                        else None)
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            good = await ctx.output.send_text("good")
            bad = await ctx.output.send_text("bad")
            assert await good.wait() == "delivered"
            assert await bad.wait() == "failed"
        ids = [good.delivery_id, bad.delivery_id]
        before = {i: (_row(db_path, i), _events(db_path, i)) for i in ids}
        assert before[good.delivery_id] == (("sent", "completed", 1), [
            "delivery.queued", "delivery.sending", "delivery.sent"])
        assert before[bad.delivery_id] == (("failed", "failed", 1), [
            "delivery.queued", "delivery.sending", "delivery.failed"])
        assert await rt.confirm(ids) == []
        assert await rt.requeue(session_id, ids) == []
        assert await rt.abandon_unacked(session_id) == []
        assert await rt.confirm_through(session_id, 10) == []
    assert {i: (_row(db_path, i), _events(db_path, i)) for i in ids} == before


async def test_a_send_is_written_queued_claimed_or_sent_with_its_work_item_to_match(
        rt, db_path) -> None:
    """The three states a send's row is inserted in, each with its ``delivery.send`` work item
    and events as the moves into that state would leave them: ``sending`` / ``claimed`` with
    one attempt for a send into an idle session with a route (claimed as it is written),
    ``queued`` / ``pending`` behind it, and ``sent`` / ``completed`` with no attempt for an
    invisible send (history only: no route ever gets it). A pinning test: it passed before."""
    session_id, route = await stalled_session(rt)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            claimed = await ctx.output.send_text("claimed")
            await route.wait_attempted(1)
            queued = await ctx.output.send_text("queued")
            hidden = await ctx.output.send_text("hidden", visible=False)
            assert _row(db_path, claimed.delivery_id) == ("sending", "claimed", 1)
            assert _events(db_path, claimed.delivery_id) == ["delivery.queued",
                                                             "delivery.sending"]
            assert _row(db_path, queued.delivery_id) == ("queued", "pending", 0)
            assert _events(db_path, queued.delivery_id) == ["delivery.queued"]
            assert await hidden.wait() == "delivered"
            assert _row(db_path, hidden.delivery_id) == ("sent", "completed", 0)
            assert _events(db_path, hidden.delivery_id) == ["delivery.queued", "delivery.sent"]
            route.release()
            assert [await claimed.wait(), await queued.wait()] == ["delivered"] * 2
    assert route.texts() == ["claimed", "queued"]
    assert _row(db_path, claimed.delivery_id) == ("sent", "completed", 1)
    assert _row(db_path, queued.delivery_id) == ("sent", "completed", 1)
