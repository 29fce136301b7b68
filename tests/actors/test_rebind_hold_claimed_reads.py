"""A claimed row handed back by a binder's hold is ``queued`` by the time the hold ends.

A row its lane claimed for the route bound before (``sending``, its platform I/O not started)
goes back behind the older rows a binder hands back inside ``rt.hold_binds``
(test_rebind_hold_claimed.py). That move is made by the binder's own hand-back
(``rt.requeue``), while the hold is on: a reader after the hold (a gateway hello's replay of
``sending`` rows) never sees the row ``sending`` any more. When the lane wrote it after the
hold, a replay that read in between wrote the row to the client ahead of the older rows, and
the client's ack, landing after the re-queue, confirmed nothing: claimed again, the row stayed
``sending`` (the connection suppressed the second send as replayed) until the client left.
"""

from __future__ import annotations

import contextlib

import trio
import trio.testing

import tidings
from tidings.testing import MemoryRoute, writer_gate

from .test_rebind_hold_claimed import HANG, _events, _hand_back, _unrouted


async def _rebound_in_a_hold(rt, session_id: str, new: MemoryRoute, gate) -> list:
    """Bind *new* inside a hold of it, release the writer's *gate*, hand the session's older
    rows back, and end the hold with the writer gated again: the rows still ``sending`` then,
    before anything the lane writes after the hold lands."""
    async with contextlib.AsyncExitStack() as hold:
        await hold.enter_async_context(rt.hold_binds(new))
        rt.router.bind(session_id, new)
        gate.release()
        await _hand_back(rt, session_id)
        async with writer_gate(rt.store) as after:
            await hold.aclose()  # the hold ends; nothing the lane writes lands
            sending = await rt.stored_deliveries(session_id, statuses=("sending",))
            after.release()
    return sending


async def test_the_hand_back_moves_the_claimed_row_back_before_the_hold_ends(
        rt, db_path) -> None:
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
                sending = await _rebound_in_a_hold(rt, session_id, new, gate)
            assert [row.outbound.delivery_id for row in sending] == []
            assert [await h.wait() for h in (first, newer)] == ["delivered"] * 2
            await new.wait_delivered(2)
        assert (await rt.delivery_status(older.delivery_id)).status == "sent"
    assert old.texts() == ["first"]
    assert new.texts() == ["older", "newer"]
    assert _events(db_path, newer.delivery_id) == [
        "delivery.queued", "delivery.sending", "delivery.unknown", "delivery.requeued",
        "delivery.sending", "delivery.sent"]


async def test_a_send_written_claimed_before_the_bind_is_queued_again_before_the_hold_ends(
        rt, db_path) -> None:
    """As above for a row written already claimed for the old route (the session was idle):
    its write was handed to the writer before the bind, so it lands before the binder's
    hand-back reads the lane (the writer answers in the order it was handed writes), and the
    hand-back moves it too (``lane.held``, or ``lane.current`` once the lane took it)."""
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
                sending = await _rebound_in_a_hold(rt, session_id, new, gate)
            newer = handles["newer"]
            assert [row.outbound.delivery_id for row in sending] == []
            assert await newer.wait() == "delivered"
            await new.wait_delivered(2)
        assert (await rt.delivery_status(older.delivery_id)).status == "sent"
    assert old.attempted == []
    assert new.texts() == ["older", "newer"]
    assert _events(db_path, newer.delivery_id) == [
        "delivery.queued", "delivery.sending", "delivery.unknown", "delivery.requeued",
        "delivery.sending", "delivery.sent"]


async def test_a_row_whose_deliver_began_is_not_handed_back_after_its_lane_ended(
        db_path, workspace) -> None:
    """The hand-back moves only a row whose ``deliver()`` has not begun. A lane cut off inside
    ``deliver()`` (a stop's grace ran out, or a crash not yet settled) still names the row as
    claimed: it stays ``sending`` (``unknown`` at the next start), never ``queued`` to go out
    a second time."""
    old, new = MemoryRoute(), MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0.01) as rt:
        session_id = await rt.create_session(channel="web")
        with trio.fail_after(HANG):
            async with rt.open_turn(session_id) as ctx:
                await _unrouted(rt, session_id, ctx)
                old.stall()
                rt.router.bind(session_id, old)
                cut = await ctx.output.send_text("cut")
                await old.wait_attempted(1)  # inside deliver(cut)
            await rt.dispatcher.stop()  # the grace runs out: the lane is cancelled
            async with rt.hold_binds(new):
                rt.router.bind(session_id, new)
                await _hand_back(rt, session_id)
            assert (await rt.delivery_status(cut.delivery_id)).outbox_status == "sending"
