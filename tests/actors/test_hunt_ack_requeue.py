"""A row handed back to its lane and delivered again to an acking route.

Tests that must show that something does not stay stuck wait for it under a real-time hang guard
(as in ``test_races.py``). Each failed on the code before its fix.
"""

from __future__ import annotations

import pytest
import trio

from tidings.testing import MemoryRoute

from .test_hunt_ack_window import HANG, _statuses, _wait_until_waiting


@pytest.mark.parametrize("how", ["unrouted", "abandoned"])
async def test_a_re_queued_row_delivered_again_to_an_acking_route_counts_in_its_window(
        rt, db_path, how) -> None:
    """A row handed back to its lane (``requeue``, or reconcile's ``"missing"``) is delivered
    again with the item its earlier outcome resolved, if a handle still holds it. The lane
    took that terminal status for an ack that came while deliver() ran: the row was left out
    of the window, so it stayed ``sending`` after its client went (abandon_unacked did not
    see it) and the window no longer bounded the unacked rows."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=1)
    with trio.fail_after(HANG):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            if how == "unrouted":
                handle = await ctx.output.send_text("a")  # no route yet
                assert await handle.wait() == "unrouted"
                rt.router.bind(session_id, route)
            else:
                rt.router.bind(session_id, route)
                handle = await ctx.output.send_text("a")
                await route.wait_delivered(1)
                assert await rt.abandon_unacked(session_id) == [handle.delivery_id]
                assert await handle.wait() == "unknown"
            assert await rt.requeue(session_id, [handle.delivery_id]) == [handle.delivery_id]
            await route.wait_delivered(1 if how == "unrouted" else 2)
            await ctx.output.send_text("b")  # the window of 1 is full: b waits
            await _wait_until_waiting(rt, session_id)
            assert _statuses(db_path, session_id) == {"a": "sending", "b": "queued"}
            # The client goes: the re-delivered row is among its unacked rows.
            assert await rt.abandon_unacked(session_id) == [handle.delivery_id]
            await route.wait_delivered(2 if how == "unrouted" else 3)
    assert _statuses(db_path, session_id) == {"a": "unknown", "b": "sending"}
