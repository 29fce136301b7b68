"""An ``approval`` frame whose ``decision`` is neither ``allow`` nor ``deny`` is refused
``bad_field`` naming ``decision``, and the refusal quotes a little of it, not all of it: the
message quoted the whole value, so a long one came back whole (as much as ``max_frame_bytes``
lets in), and one whose refusal was over the 4 MiB a server frame may be (a gateway configured
with a bigger ``max_frame_bytes``; or JSON escapes, six bytes a character) was dropped at the
connection: the client heard nothing, not even that its answer was refused."""

from __future__ import annotations

import pytest
import trio

from .conftest import frame_is


@pytest.mark.parametrize(("max_frame_bytes", "size"), [(65536, 60_000),
                                                       (8 << 20, 5 << 20)])
async def test_a_long_bad_decision_is_refused_by_name_and_told(
        rt, serve_gateway, connect, max_frame_bytes, size) -> None:
    async with serve_gateway(rt, max_frame_bytes=max_frame_bytes) as (_, url):
        with trio.fail_after(60):  # hang guard
            async with connect(url, "alpha") as client:
                await client.send({"type": "approval", "request_id": "r1",
                                   "decision": "y" * size})
                await client.send({"type": "ping"})
                frames = await client.receive_until(frame_is("pong"))
    [error] = [f for f in frames if f["type"] == "error"]  # before the pong, not dropped
    assert (error["code"], error["field"]) == ("bad_field", "decision")
    assert len(error["message"]) < 300


@pytest.mark.parametrize(("frame", "field"), [
    ({"type": "hello", "token": "t" * 16, "protocol": "p" * 60_000}, "protocol"),
    ({"type": "hello", "token": "t" * 16, "protocol": 1, "conversation": "c",
      "after_seq": "s" * 60_000},
     "after_seq"),
])
def test_other_refused_values_are_quoted_cut_too(frame, field) -> None:
    # The same as the decision's: a hello's protocol and any count (after_seq, up_to_seq)
    # were quoted whole in their refusal.
    import json

    from tidings.channels._gateway_frames import FrameError, parse_client_frame

    with pytest.raises(FrameError) as caught:
        parse_client_frame(json.dumps(frame), max_frame_bytes=1 << 20)
    assert caught.value.field == field
    assert len(str(caught.value)) < 300
