"""A delivery whose frame would be over what a client takes: JSON escapes make a text within
MAX_TEXT_BYTES a far bigger frame (a control character is six bytes escaped, ``"`` two, and
the frame carries the text twice)."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import MAX_TEXT_BYTES

from .conftest import frame_is


@pytest.mark.parametrize("char", ["\x01", '"'])
async def test_an_oversized_delivery_frame_fails_that_row_not_the_connection(
        rt, serve_gateway, connect, char) -> None:
    """It used to be sent, the client's connection closed ``1009`` on it, and the row stayed
    unacked: replayed at every reconnect, closing the connection again (a poison message)."""
    async with serve_gateway(rt) as (_, url):
        with trio.fail_after(30):
            async with connect(url, "alpha") as client:
                session_id = client.session_id
                big = await rt.notify(session_id, char * MAX_TEXT_BYTES)
                after = await rt.notify(session_id, "next")
                frames = await client.receive_until(frame_is("delivery", text="next"))
                assert not any(f.get("delivery_id") == big.delivery_id for f in frames)
                await client.ack(frames[-1]["delivery_id"])
                await client.sync()
                await client.receive_until(frame_is("synced"))
    failed = await rt.delivery_status(big.delivery_id)
    assert failed.status == "failed"
    assert "frame_too_big" in (failed.last_error or "")
    assert (await rt.delivery_status(after.delivery_id)).status == "sent"


async def test_a_replay_skips_a_row_whose_frame_is_too_big(
        rt, serve_gateway, connect, wait_status, monkeypatch) -> None:
    """A row sent before deliver() checked the frame's size (an older version, or one claimed
    before a crash, ``unknown`` since) is not replayed: the client would close ``1009`` on it
    at every reconnect."""
    from tidings.channels import _gateway, _gateway_conn

    async with serve_gateway(rt) as (_, url):
        with trio.fail_after(30):
            for module in (_gateway, _gateway_conn):  # as the gateway was
                monkeypatch.setattr(module, "MAX_SERVER_FRAME_BYTES", 1 << 26)
            async with connect(url, "alpha", max_message_size=1 << 26) as client:
                session_id = client.session_id
                big = await rt.notify(session_id, "\x01" * MAX_TEXT_BYTES)
                await client.receive_until(frame_is("delivery", delivery_id=big.delivery_id),
                                           ack=False)
            await wait_status(rt, big.delivery_id, "unknown")
            monkeypatch.undo()
            async with connect(url, "alpha", session_id=session_id, after_seq=0) as client:
                await rt.notify(session_id, "next")
                frames = await client.receive_until(frame_is("delivery", text="next"))
                assert not any(f.get("delivery_id") == big.delivery_id for f in frames)
    assert (await rt.delivery_status(big.delivery_id)).status == "unknown"
