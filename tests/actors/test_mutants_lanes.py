"""Session lanes: behaviour a mutation audit of ``actors/_lane_actor.py`` and ``_lanes.py``
found no test pinning. Each test names the mutant it kills (a change no other test noticed);
each passes on the real code and failed with that change applied."""

from __future__ import annotations

import trio
import trio.testing

import tidings
from tidings.store import transition
from tidings.testing import MemoryRoute

from .conftest import rows

HANG = 30.0
"""Real-time hang guard: these runtimes run on trio's real clock."""


async def test_a_claim_that_finds_its_row_moved_on_is_no_lane_crash(rt) -> None:
    """A row ended by someone else before its lane claimed it: the lane reports where it
    ended and goes on with the next row, without crashing. Mutant: the claim's "not applied"
    unchecked (the lane crashed on it, and its restart happened to settle the same)."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.stall()
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            await ctx.output.send_text("a")
            await route.wait_attempted(1)
            ended = await ctx.output.send_text("b")  # queued behind a, not yet claimed
            [moved] = await rt.store.commit([transition(
                ended.delivery_id, "failed", now=rt.store.clock(), error="cancelled by hand")])
            assert moved.applied
            after = await ctx.output.send_text("c")
            route.release()
            assert await ended.wait() == "failed"
            assert await after.wait() == "delivered"
        assert list(rt.dispatcher.supervisor.restart_log) == []
    assert route.texts() == ["a", "c"]


async def test_a_row_its_lane_claims_is_leased_for_lease_seconds(db_path, workspace) -> None:
    """A row queued behind another is claimed by its lane with ``lease_expires_at`` = the
    claim's time + ``lease`` (as a row written claimed is). Mutant: the lane's claim leased
    it until the claim's own time (expired as it was written)."""
    lease, now = 3600, 1_700_000_000
    route = MemoryRoute()
    route.stall()
    with trio.fail_after(HANG):
        async with tidings.open_runtime(db_path, workspace=workspace, lease=lease,
                                        clock=lambda: now) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            await rt.notify(session_id, "first")
            await route.wait_attempted(1)
            second = await rt.notify(session_id, "second")  # queued: its lane claims it
            route.release()
            route.stall()  # (no checkpoint between: the second delivery stalls)
            await route.wait_attempted(2)
            status = await rt.delivery_status(second.delivery_id)
            route.release()
            assert await second.wait() == "delivered"
    assert (status.outbox_status, status.lease_expires_at) == ("sending", now + lease)


async def test_a_row_taken_during_a_hold_that_handed_rows_back_is_not_claimed(
        rt, db_path) -> None:
    """A row its lane took while a binder held the session (the lane waits before its claim)
    is not claimed when the binder handed older rows back meanwhile: it stays ``queued`` and
    goes out after them with its first claim (attempt 1, no ``unknown`` in its history).
    Mutant: claimed all the same after the hold (a later check sent it back, ``unknown``
    then ``queued``: a second attempt and an ``unknown`` in its history for no reason)."""
    session_id = await rt.create_session(channel="web")
    old, new = MemoryRoute(), MemoryRoute()
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            older = await ctx.output.send_text("older")  # no route bound: unrouted
            assert await older.wait() == "unrouted"
            old.stall()
            rt.router.bind(session_id, old)
            first = await ctx.output.send_text("first")
            await old.wait_attempted(1)  # the lane is inside deliver(first)
            newer = await ctx.output.send_text("newer")  # queued behind it
            async with rt.hold_binds(new):
                rt.router.bind(session_id, new)
                old.release()
                while not rt.dispatcher.lane(session_id).waiting:  # newer taken, held
                    await trio.testing.wait_all_tasks_blocked()
                await rt.unrouted_written(session_id)
                assert await rt.requeue(session_id, [older.delivery_id]) == [
                    older.delivery_id]
            assert [await h.wait() for h in (first, newer)] == ["delivered"] * 2
            await new.wait_delivered(2)
    assert new.texts() == ["older", "newer"]
    assert (await rt.delivery_status(newer.delivery_id)).attempts == 1
    assert [kind for (kind,) in rows(db_path, "SELECT type FROM events WHERE delivery_id = ? "
                                              "ORDER BY event_seq", newer.delivery_id)] == [
        "delivery.queued", "delivery.sending", "delivery.sent"]


async def test_a_delivered_row_moved_on_meanwhile_reports_its_durable_end(rt) -> None:
    """A row ended by someone else (an operator's ``failed``) while its route was delivering
    it: the lane's ``sent`` finds it moved on, and its handle reports the durable end, not
    ``delivered``. Mutant: the background flush resolved every row it wrote ``delivered``,
    applied or not (``wait()`` then contradicted ``delivery_status``)."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.stall()
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("a")
            await route.wait_attempted(1)  # sending, inside deliver()
            [moved] = await rt.store.commit([transition(
                handle.delivery_id, "failed", now=rt.store.clock(), error="cancelled by hand")])
            assert moved.applied
            route.release()
            assert await handle.wait() == "failed"
    assert (await rt.delivery_status(handle.delivery_id)).status == "failed"
    assert route.texts() == ["a"]


async def test_unacked_rows_may_fill_the_lane_budget_exactly(rt) -> None:
    """Unacked rows may hold up to ``lane_bytes``, that much included: two texts of half the
    budget both go to an acking route, a third waits for an ack. Mutant: ``<`` for ``<=``
    (the second waited, the budget never used to its end)."""
    size = 1000
    rt.dispatcher.lane_bytes = 2 * size
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=32)
    rt.router.bind(session_id, route)
    texts = [letter * size for letter in "abc"]
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id, history_policy="transient") as ctx:
            handles = [await ctx.output.send_text(text) for text in texts]
        while not rt.dispatcher.lane(session_id).waiting:  # the third waits for an ack
            await trio.testing.wait_all_tasks_blocked()
        assert route.texts() == texts[:2]
        assert rt.statistics().dispatch.unacked_bytes == 2 * size
        await rt.confirm([handles[0].delivery_id])
        await route.wait_delivered(3)
    assert route.texts() == texts


async def test_dispatch_statistics_count_each_end_once(rt) -> None:
    """``statistics().dispatch`` counts each delivery's end once, although an end may be
    reported twice (an ``unrouted`` row: as its write commits, and by the lane that waited
    for it). Mutant: every report counted (two ``unrouted`` for one row)."""
    session_id = await rt.create_session(channel="web")
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            lost = [await ctx.output.send_text(f"u{i}") for i in range(3)]
            assert [await h.wait() for h in lost] == ["unrouted"] * 3
            route = MemoryRoute()
            rt.router.bind(session_id, route)
            sent = await ctx.output.send_text("d")
            assert await sent.wait() == "delivered"
            route.fail = ConnectionError("down")
            failed = await ctx.output.send_text("f")
            assert await failed.wait() == "failed"
    stats = rt.statistics().dispatch
    assert (stats.unrouted, stats.delivered, stats.failed) == (3, 1, 1)


async def test_a_hand_back_leaves_a_row_whose_delivery_has_begun(rt) -> None:
    """Inside a hold, ``rt.requeue`` of older rows sends back the row the lane claimed only if
    its platform I/O has not begun: a row its route is delivering is left to that call (it
    is on the platform, or about to be). Mutant: the hand-back took a row inside
    ``deliver()`` too (it went back to ``queued`` and out again: the person got it twice)."""
    session_id = await rt.create_session(channel="web")
    old, new = MemoryRoute(), MemoryRoute()
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            older = await ctx.output.send_text("older")  # no route bound: unrouted
            assert await older.wait() == "unrouted"
            old.stall()
            rt.router.bind(session_id, old)
            first = await ctx.output.send_text("first")
            await old.wait_attempted(1)  # inside deliver(first)
            async with rt.hold_binds(new):
                rt.router.bind(session_id, new)
                await rt.unrouted_written(session_id)
                assert await rt.requeue(session_id, [older.delivery_id]) == [
                    older.delivery_id]
            old.release()
            assert await first.wait() == "delivered"
            await new.wait_delivered(1)
    assert (old.texts(), new.texts()) == (["first"], ["older"])
    assert (await rt.delivery_status(first.delivery_id)).attempts == 1
