"""``GatewayClient.ack(*delivery_ids)`` sends what the gateway takes: an ack frame names 1 to
1,000 ids. With none it sent an empty list, and with more than 1,000 one frame: the gateway
refused both (``bad_field``), in an ``error`` frame the caller reads later if at all, and the
deliveries stayed unacked (re-sent at the next connection). A bad id refused the whole frame
the same way; it is refused by name before anything is sent."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import ValidationError


def _synced_or_error(frame: dict) -> bool:
    return frame.get("type") == "synced"


async def test_an_ack_of_no_ids_sends_nothing(rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "acks") as client:
        with trio.fail_after(20):
            await client.ack()
            await client.sync()
            frames = await client.receive_until(_synced_or_error)
    assert [frame["type"] for frame in frames] == ["synced"], frames


async def test_an_ack_of_more_ids_than_a_frame_takes_goes_in_several(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "acks") as client, \
            connect(url, "others") as other:
        # Two deliveries of another conversation, at the head of each frame's ids: each
        # frame is refused naming its own (ids of no delivery are ignored, no error).
        theirs = [(await rt.notify(other.session_id, f"n{i}")).delivery_id for i in range(2)]
        ids = [f"not-ours-{i}" for i in range(1500)]
        ids[0], ids[1000] = theirs
        with trio.fail_after(20):
            await client.ack(*ids)
            errors = []
            while len(errors) < 2:
                frame = await client.receive()
                if frame["type"] == "error":
                    errors.append(frame)
    # Each frame was read and looked up (none of them are this conversation's), not refused
    # as a malformed list.
    assert [frame["code"] for frame in errors] == ["unknown_delivery"] * 2, errors
    assert theirs[0] in errors[0]["message"]
    assert theirs[1] in errors[1]["message"]


@pytest.mark.parametrize("bad", [5, "", None])
async def test_a_bad_id_is_refused_by_name_before_anything_is_sent(
        rt, serve_gateway, connect, bad) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "acks") as client:
        with pytest.raises(ValidationError, match="delivery_ids"):
            await client.ack("fine-id", bad)
        with trio.fail_after(20):
            await client.sync()
            frames = await client.receive_until(_synced_or_error)
    assert [frame["type"] for frame in frames] == ["synced"], frames
