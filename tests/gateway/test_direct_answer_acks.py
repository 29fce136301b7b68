"""A gateway client's command answered with no session (``/status`` right after ``/clear``)
is not held until the client acks what it was sent before: the connection reads the client's
acks only after it handled that message, so waiting for them waited for good."""

from __future__ import annotations

import trio


async def test_status_after_clear_is_answered_before_the_clear_answer_is_acked(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        await client.message("hi")
        with trio.fail_after(10):
            await client.receive_until(is_frame("delivery", kind="message"))
            await client.message("/clear")
            await client.message("/status")
            frames = await client.receive_until(is_frame("notice", command="status"))
        [cleared] = [f for f in frames if f.get("command") == "clear"]
        assert frames.index(cleared) < len(frames) - 1  # "Cleared." came first
        await client.ack(cleared["delivery_id"])
