"""``rt.abandon_unacked`` and an unacked row someone else moved to a state that is not final:
``unknown`` (by hand here: it may still become ``sent`` or ``queued``), then perhaps back to
``queued`` by ``rt.requeue`` (its client proved it missing), which the lane delivers again.

The abandon's ``unknown`` write finds the row moved on and settles it from the store; a
``queued`` (or ``sending`` again) row is not an end, so its handle was left unresolved while
the row left the lane's unacked set: ``wait()`` hung until stop, and a delivery of it again
that reused the item was dropped from the unacked set, so no later abandon found it. The
handle now ends ``unknown`` (its first outcome: the client was sent it and never acked; what
the row does next is followed with ``rt.delivery_status``, see ``DeliveryHandle.wait``), and
the row delivered again is unacked afresh, abandoned as any other.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.store import transition
from tidings.testing import MemoryRoute

HANG = 10.0
"""Real-time hang guard: these runtimes run on trio's real clock."""


async def _unacked(rt, session_id: str, n: int) -> None:
    while len(rt.dispatcher.lane(session_id).unacked) < n:
        await trio.testing.wait_all_tasks_blocked()


@pytest.mark.parametrize("then", ["left unknown", "requeued", "requeued and delivered"])
async def test_abandon_of_a_row_moved_on_to_a_state_not_final(rt, then) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=4)
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):  # a guard against hanging, not a wait
        handle = await rt.notify(session_id, "a")
        await route.wait_delivered(1)
        await _unacked(rt, session_id, 1)
        [moved] = await rt.store.commit([transition(
            handle.delivery_id, "unknown", now=rt.store.clock(), error="moved by hand")])
        assert moved.applied
        if then != "left unknown":
            assert await rt.requeue(session_id, [handle.delivery_id]) == [handle.delivery_id]
        if then == "requeued and delivered":  # the lane sends it again before the abandon
            await route.wait_delivered(2)
            await _unacked(rt, session_id, 1)
        abandoned = await rt.abandon_unacked(session_id)
        assert await handle.wait() == "unknown"
        if then == "left unknown":
            assert abandoned == []
        else:
            if then == "requeued":
                assert abandoned == []
                await route.wait_delivered(2)
                await _unacked(rt, session_id, 1)
            # The row delivered again is unacked, and a later abandon finds it.
            assert abandoned + await rt.abandon_unacked(session_id) == [handle.delivery_id]
            assert (await rt.delivery_status(handle.delivery_id)).status == "unknown"
    assert rt.statistics().dispatch.unacked_bytes == 0
    assert not rt.dispatcher.lane(session_id).unacked
