"""An unbind wakes a lane that waits for room in its acking route's window: its next row finds
no route and is ``unrouted`` at once, as any row its lane takes after an unbind is.

Before, only a bind (and an ack, an abandon) woke the wait, so the row stayed ``queued``, its
``handle.wait()`` hanging, until something else came by."""

from __future__ import annotations

import trio

from tidings.testing import MemoryRoute

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works (the
runtime's SQLite I/O runs in threads)."""


async def test_an_unbind_ends_a_wait_for_room_in_the_ack_window(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=1)
    token = rt.router.bind(session_id, route)
    with trio.fail_after(HANG):  # hang guard
        async with rt.open_turn(session_id, history_policy="transient") as ctx:
            first = await ctx.output.send_text("one")
            second = await ctx.output.send_text("two")
        await route.wait_delivered(1)
        while not rt.dispatcher.lane(session_id).waiting:  # "two" waits for an ack
            await trio.lowlevel.checkpoint()
        rt.router.unbind(token)
        assert await second.wait() == "unrouted"
    assert route.texts() == ["one"]
    assert (await rt.delivery_status(first.delivery_id)).status == "sending"  # still unacked
