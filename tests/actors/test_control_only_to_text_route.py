"""README (Routing): a control block has no text fallback, so a send of control blocks only
reaches a route that cannot render ``control`` as an outbound with no blocks and an empty
text, with the ``delivery.degraded`` event saying so; an adapter should not post it."""

from __future__ import annotations

import trio

from tidings.testing import MemoryRoute


async def test_a_control_only_send_reaches_a_text_route_empty_and_marked_degraded(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()  # no capabilities: text only
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id, history_policy="transient") as ctx:
        handle = await ctx.output.send([{"type": "control", "action": "buttons"}])
    with trio.fail_after(30):
        assert await handle.wait() == "delivered"
    [outbound] = route.delivered
    assert (outbound.blocks, outbound.text) == ((), "")
    events = {e.type: e.data for e in await rt.delivery_events(handle.delivery_id)}
    assert list(events["delivery.degraded"]["missing"]) == ["control"]
