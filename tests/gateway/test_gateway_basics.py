"""The gateway in process: hello/welcome, messages, deliveries with seq, lifecycle, acks."""

from __future__ import annotations

import trio

from tidings.channels import EchoAgent


async def test_a_message_is_answered_with_lifecycle_and_an_acked_delivery(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt, agent=EchoAgent(chunk_size=4)) as (_gateway, url), \
            connect(url, "alpha") as client:
        welcome = client.welcome
        assert welcome["type"] == "welcome"
        assert welcome["last_seq"] == 0
        assert welcome["protocol"] == 1
        assert welcome["heartbeat_s"] > 0
        seen: list[dict] = []

        def finished(frame: dict) -> bool:
            seen.append(frame)
            types = {(f["type"], f.get("event")) for f in seen}
            return {("delivery", None), ("lifecycle", "completed"),
                    ("accepted", None)} <= types

        with trio.fail_after(10):
            message_id = await client.message("hello there")
            await client.receive_until(finished)
        accepted = [f for f in seen if f["type"] == "accepted"]
        assert accepted == [{"type": "accepted", "id": message_id, "outcome": "started"}]
        lifecycle = [f for f in seen if f["type"] == "lifecycle"]
        assert next(f["event"] for f in lifecycle) == "started"
        assert [f["event"] for f in lifecycle][-1] == "completed"
        assert all(f["message_id"] == message_id for f in lifecycle)
        chunks = "".join(f["chunk"] for f in lifecycle if f["event"] == "text_chunk")
        assert chunks == "hello there"
        [delivery] = [f for f in seen if f["type"] == "delivery"]
        assert delivery["text"] == "hello there"
        assert delivery["seq"] == 1
        assert delivery["kind"] == "message"
        assert delivery["session_id"] == welcome["session_id"]
        assert delivery["blocks"] == [{"type": "text", "text": "hello there"}]
        with trio.fail_after(10):
            await wait_status(rt, delivery["delivery_id"], "sent")
