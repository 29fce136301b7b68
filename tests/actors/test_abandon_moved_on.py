"""``rt.abandon_unacked`` and an unacked row someone else moved first (an operator's
``failed``, or an ack whose answer was lost: ``sent`` written, the lane never told): the
row leaves the lane's unacked set, and its handle ends as the store says the row ended,
counted once. Left unresolved, ``handle.wait()`` ended only when the runtime stopped."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.store import transition
from tidings.testing import MemoryRoute, writer_gate

HANG = 30.0
"""Real-time hang guard: these runtimes run on trio's real clock."""


@pytest.mark.parametrize(("moved_to", "ends"), [("failed", "failed"), ("sent", "delivered")])
async def test_abandon_resolves_a_row_moved_on_to_its_durable_end(rt, moved_to, ends) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=4)
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        handle = await rt.notify(session_id, "a")
        await route.wait_delivered(1)
        while not rt.statistics().dispatch.unacked_bytes:  # deliver() returned: unacked
            await trio.testing.wait_all_tasks_blocked()
        [moved] = await rt.store.commit([transition(
            handle.delivery_id, moved_to, now=rt.store.clock(), error="ended by hand")])
        assert moved.applied
        before = rt.statistics().dispatch
        assert await rt.abandon_unacked(session_id) == []  # it moved nothing itself
        assert await handle.wait() == ends
    after = rt.statistics().dispatch
    assert after.unacked_bytes == 0
    assert (after.delivered - before.delivered, after.failed - before.failed) == (
        (1, 0) if ends == "delivered" else (0, 1))
    assert (await rt.delivery_status(handle.delivery_id)).status == moved_to
    assert rt.dispatcher.settled(session_id)


async def test_abandon_still_makes_the_rows_it_moves_unknown(rt) -> None:
    """Beside a row moved on, the rows abandon does move end ``unknown``, each once."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=4)
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        first = await rt.notify(session_id, "a")
        second = await rt.notify(session_id, "b")
        await route.wait_delivered(2)
        while len(rt.dispatcher.lane(session_id).unacked) < 2:
            await trio.testing.wait_all_tasks_blocked()
        await rt.store.commit([transition(
            first.delivery_id, "failed", now=rt.store.clock(), error="ended by hand")])
        assert await rt.abandon_unacked(session_id) == [second.delivery_id]
        assert [await first.wait(), await second.wait()] == ["failed", "unknown"]
    assert rt.statistics().dispatch.unacked_bytes == 0


async def test_abandon_cut_off_while_its_write_commits_still_resolves_a_row_moved_on(
        rt) -> None:
    """A caller cut off while abandon's write waits behind the writer: the write commits
    after all (its ``unknown`` applies to the row it could move), and the row someone else
    moved first still leaves the lane, its handle ended as the store says. Left to the next
    abandon, it stayed unacked (holding its room in the ack window) and its ``wait()`` ended
    only at stop."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=4)
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):
        first = await rt.notify(session_id, "a")
        second = await rt.notify(session_id, "b")
        await route.wait_delivered(2)
        while len(rt.dispatcher.lane(session_id).unacked) < 2:
            await trio.testing.wait_all_tasks_blocked()
        await rt.store.commit([transition(
            first.delivery_id, "failed", now=rt.store.clock(), error="ended by hand")])
        async with writer_gate(rt.store) as gate:
            with trio.CancelScope() as cut:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(rt.abandon_unacked, session_id)
                    await trio.testing.wait_all_tasks_blocked()  # its write waits: cut it off
                    cut.cancel()
            assert cut.cancelled_caught
            gate.release()
        assert [await first.wait(), await second.wait()] == ["failed", "unknown"]
    assert rt.statistics().dispatch.unacked_bytes == 0
    assert rt.dispatcher.settled(session_id)
