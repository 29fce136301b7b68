"""A ``visible=False`` send writes history without sending (README): its outbox row is
recorded ``sent`` at once and never reaches a route, so a reconnect's replay must not show it
either."""

from __future__ import annotations

import trio


async def test_a_reconnect_never_replays_a_row_written_with_visible_false(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        async with connect(url, "alpha") as first:
            session_id = first.welcome["session_id"]
        async with rt.open_turn(session_id) as ctx:
            hidden = await ctx.output.send_text("for the history only", visible=False)
            shown = await ctx.output.send_text("for the person")
        assert await hidden.wait() == "delivered"
        async with connect(url, "alpha", session_id=session_id, after_seq=0) as second:
            frames: list[dict] = []
            with trio.fail_after(10):
                while True:
                    frame = await second.receive()
                    if frame["type"] == "delivery":
                        frames.append(frame)
                        await second.ack(frame["delivery_id"])
                        if frame["delivery_id"] == shown.delivery_id:
                            break
        assert [f["text"] for f in frames] == ["for the person"]
