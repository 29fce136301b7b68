"""``/resume`` over the gateway: a row of the resumed session that went ``unrouted`` while no
conversation had it goes out at the resume, ahead of the "Resumed" answer, as it does for every
other channel (README, "Rows that found no route ... /resume binds it again")."""

from __future__ import annotations

import trio


async def _next_delivery(client) -> dict:
    with trio.fail_after(10):
        while True:
            frame = await client.receive()
            if frame["type"] == "delivery":
                await client.ack(frame["delivery_id"])
                return frame


async def test_a_resumed_sessions_unrouted_row_goes_out_before_the_answer(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        left = client.welcome["session_id"]
        await client.message("/new")
        assert (await _next_delivery(client))["text"].startswith("Started a new session")
        assert rt.router.binding(left) is None  # left behind: nothing routes it now
        late = await rt.notify(left, "late in the left session")
        assert await late.wait() == "unrouted"
        await client.message(f"/resume {left}")
        first, second = await _next_delivery(client), await _next_delivery(client)
        assert [(f["session_id"], f["seq"], f["text"]) for f in (first, second)] == [
            (left, 1, "late in the left session"),
            (left, 2, f"Resumed session {left}.")]
        with trio.fail_after(10):
            await wait_status(rt, late.delivery_id, "sent")
