"""Rows handed back to a session's lane (``rt.requeue``: ``unrouted`` rows when a gateway
client says hello again) go out in seq order before the newer rows the lane holds in memory
but has not taken yet, as the gateway's hello and the protocol's "strictly increasing on a
connection" need. Seen end to end (``test_hunt_e2e_kill.py``): after a SIGKILL and a restart,
a reconnecting client was sent seq 5, 6, then 3, 4."""

from __future__ import annotations

import trio

from tidings.testing import MemoryRoute

HANG = 30  # real-time hang guard: a failure must not hang the suite


async def test_requeued_rows_go_before_newer_rows_the_lane_has_not_taken(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            early = [await ctx.output.send_text(text) for text in ("s1", "s2")]  # no route
            for handle in early:
                assert await handle.wait() == "unrouted"
            rt.router.bind(session_id, route)
            route.stall()
            await ctx.output.send_text("s3")
            await route.wait_attempted(1)  # s3 is with the route; s4, s5 wait in the lane
            for text in ("s4", "s5"):
                await ctx.output.send_text(text)
            ids = [handle.delivery_id for handle in early]
            assert await rt.requeue(session_id, ids) == ids
            route.release()
            await route.wait_delivered(5)
    assert route.texts() == ["s3", "s1", "s2", "s4", "s5"]
