"""A row delivered live is replayed too, whatever its size: the marks a replay adds to its frame
(``created_at``; a catch-up's ``catch_up``) are optional fields of protocol 1, and a frame they
would push over ``MAX_SERVER_FRAME_BYTES`` goes without them, as it went live. It used to be
skipped (``event=replay_skipped``): a row within a few dozen bytes of the limit, sent on a
connection that dropped before the client read it, never reached the client again."""

from __future__ import annotations

import trio

from tidings.actors import MAX_TEXT_BYTES
from tidings.channels._gateway_frames import MAX_SERVER_FRAME_BYTES, encode, encoded_size

from .conftest import frame_is


def _size(frame: dict) -> int:
    return encoded_size(encode(frame))


async def test_a_row_that_went_out_live_just_under_the_limit_is_replayed(
        rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_, url):
        with trio.fail_after(60):
            async with connect(url, "alpha") as client:
                session_id = client.session_id
                probe = await rt.notify(session_id, "x")
                [*_, seen] = await client.receive_until(
                    frame_is("delivery", delivery_id=probe.delivery_id))
                # The frame carries its text twice; a '"' is two bytes escaped, an 'a' one.
                overhead = _size(seen) - 2
                escaped = (MAX_SERVER_FRAME_BYTES - 8 - overhead) // 2
                quotes = escaped - MAX_TEXT_BYTES
                text = '"' * quotes + "a" * (MAX_TEXT_BYTES - quotes)
                big = await rt.notify(session_id, text)
                [*_, live] = await client.receive_until(
                    frame_is("delivery", delivery_id=big.delivery_id), ack=False)
                assert MAX_SERVER_FRAME_BYTES - 10 < _size(live) <= MAX_SERVER_FRAME_BYTES
            await wait_status(rt, big.delivery_id, "unknown")  # the client never acked it
            async with connect(url, "alpha", session_id=session_id,
                               after_seq=seen["seq"]) as client:
                await rt.notify(session_id, "next")
                frames = await client.receive_until(frame_is("delivery", text="next"))
    [replayed] = [f for f in frames if f.get("delivery_id") == big.delivery_id]
    assert replayed["text"] == text
    assert _size(replayed) <= MAX_SERVER_FRAME_BYTES
    assert (await rt.delivery_status(big.delivery_id)).status == "sent"
