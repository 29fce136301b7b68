"""Routes whose client acknowledges: the ack window, confirm, and a dropped connection."""

from __future__ import annotations

import trio
import trio.testing

from tidings.testing import MemoryRoute


async def _acking_session(rt, window: int = 2):
    session_id = await rt.create_session(channel="gateway")
    route = MemoryRoute(ack_window=window)
    rt.router.bind(session_id, route)
    return session_id, route


async def _send_all(rt, session_id: str, texts: list[str]):
    async with rt.open_turn(session_id) as ctx:
        return [await ctx.output.send_text(text) for text in texts]


async def test_rows_stay_sending_until_acked_and_the_window_bounds_them(rt) -> None:
    session_id, route = await _acking_session(rt, window=2)
    handles = await _send_all(rt, session_id, ["a", "b", "c"])
    await route.wait_delivered(2)
    await trio.testing.wait_all_tasks_blocked()
    assert route.texts() == ["a", "b"]  # the third waits for room in the window
    statuses = [(await rt.delivery_status(h.delivery_id)).outbox_status for h in handles]
    assert statuses == ["sending", "sending", "queued"]
    assert await rt.confirm([handles[0].delivery_id]) == [handles[0].delivery_id]
    assert await handles[0].wait() == "delivered"
    await route.wait_delivered(3)
    assert route.texts() == ["a", "b", "c"]
    assert await rt.confirm([h.delivery_id for h in handles]) == [handles[1].delivery_id,
                                                                  handles[2].delivery_id]
    assert [await h.wait() for h in handles] == ["delivered"] * 3
    assert [(await rt.delivery_status(h.delivery_id)).status for h in handles] == ["sent"] * 3


async def test_a_dropped_connection_turns_unacked_rows_unknown_and_a_late_ack_resolves(
        rt) -> None:
    session_id, route = await _acking_session(rt, window=4)
    handles = await _send_all(rt, session_id, ["x", "y"])
    await route.wait_delivered(2)
    dropped = await rt.abandon_unacked(session_id)
    assert dropped == [h.delivery_id for h in handles]
    assert [await h.wait() for h in handles] == ["unknown", "unknown"]
    assert await rt.confirm([handles[0].delivery_id]) == [handles[0].delivery_id]
    assert (await rt.delivery_status(handles[0].delivery_id)).status == "sent"
    assert (await rt.delivery_status(handles[1].delivery_id)).status == "unknown"
    assert await rt.confirm(["dlv_unknown_id"]) == []
