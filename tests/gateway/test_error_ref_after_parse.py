"""An ``error`` frame carries ``ref``, the refused frame's ``id``, also when the frame parsed
and was refused after (an answer to no question, an ack of another conversation's delivery,
a sync of a foreign session), and names the field at fault: a client that tags its frames
matches the refusal to the frame, as it does for a field error found while parsing."""

from __future__ import annotations

import pytest
import trio


@pytest.mark.parametrize(("frame", "code", "field"), [
    ({"type": "answer", "prompt_id": "p-none", "text": "yes"}, "unknown_prompt", "prompt_id"),
    ({"type": "approval", "request_id": "r-none", "decision": "allow"}, "unknown_prompt",
     "request_id"),
    ({"type": "ack", "delivery_ids": ["OTHERS"]}, "unknown_delivery", "delivery_ids"),
    ({"type": "ack", "up_to_seq": 3, "session_id": "session_nobodys"}, "unknown_delivery",
     "session_id"),
    ({"type": "sync", "session_id": "session_nobodys"}, "bad_field", "session_id"),
])
async def test_a_refusal_after_the_parse_carries_the_frames_id_and_field(
        rt, serve_gateway, connect, frame, code, field) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        if frame.get("delivery_ids") == ["OTHERS"]:  # a delivery of another conversation
            async with connect(url, "beta") as beta:
                handle = await rt.notify(beta.session_id, "for beta")
            frame = {**frame, "delivery_ids": [handle.delivery_id]}
        await client.send({**frame, "id": "tagged-7"})
        with trio.fail_after(10):
            error = await client.receive()
    assert error["type"] == "error"
    assert (error["code"], error.get("field"), error.get("ref")) == (code, field, "tagged-7")
