"""The ack window against rebinds and re-queued rows.

Tests that must show that something does not stay stuck wait for it under a real-time hang guard
(as in ``test_races.py``: the runtime's SQLite I/O runs in threads, so a mock clock would jump
straight to the guard on a slow fsync). Each failed on the code before its fix.
"""

from __future__ import annotations

import pytest
import trio

from tidings.testing import MemoryRoute

from .conftest import rows

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works."""


def _statuses(db_path, session_id: str) -> dict[str, str]:
    return dict(rows(db_path, "SELECT text, status FROM outbox WHERE session_id = ? ORDER BY seq",
                     session_id))


async def _wait_until_waiting(rt, session_id: str) -> None:
    """Until the session's lane waits for room in its ack window (observed, not forced)."""
    lane = rt.dispatcher.lane(session_id)
    while lane is None or not lane.waiting:
        await trio.lowlevel.checkpoint()
        lane = rt.dispatcher.lane(session_id)


@pytest.mark.parametrize("window", [0, 2])
async def test_a_rebind_wakes_a_lane_waiting_for_room_in_the_old_route_s_window(
        rt, db_path, window) -> None:
    """The lane re-reads the live binding's window each time it is woken, but only an ack
    woke it: rebound to a route with no window (or a wider one), the next delivery waited
    until the old route's client acked, which may be never."""
    session_id = await rt.create_session(channel="web")
    old = MemoryRoute(ack_window=1)
    rt.router.bind(session_id, old)
    with trio.fail_after(HANG):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            await ctx.output.send_text("a")
            await old.wait_delivered(1)
            second = await ctx.output.send_text("b")  # waits for room in the window of 1
            await _wait_until_waiting(rt, session_id)
            new = MemoryRoute(ack_window=window or None)
            rt.router.bind(session_id, new)
            await new.wait_delivered(1)
            if not window:
                assert await second.wait() == "delivered"
    assert new.texts() == ["b"]
    assert _statuses(db_path, session_id) == {"a": "sending",
                                              "b": "sent" if not window else "sending"}
