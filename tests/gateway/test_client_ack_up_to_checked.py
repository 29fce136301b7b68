"""``GatewayClient.ack_up_to`` and ``sync`` refuse, by name and before sending anything, what
the gateway would refuse: a ``seq`` that is no integer >= 0 (a ``"5"`` read from a log, a
``True``), a ``session_id`` that is no non-empty string. Sent, the gateway answered with an
``error`` frame the caller reads later, if at all (``receive_until`` passes over it): the
rows stayed unacked, the session's ack window filled and deliveries stopped, nothing said."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import ValidationError


def _synced(frame: dict) -> bool:
    return frame.get("type") == "synced"


async def _nothing_was_sent(client) -> None:
    with trio.fail_after(20):
        await client.sync()
        frames = await client.receive_until(_synced)
    assert [frame["type"] for frame in frames] == ["synced"], frames


@pytest.mark.parametrize("seq", ["5", -1, True, 2.0, None])
async def test_ack_up_to_refuses_a_seq_that_is_no_count(rt, serve_gateway, connect,
                                                          seq) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "acks") as client:
        with pytest.raises(ValidationError, match="seq"):
            await client.ack_up_to(seq)
        await _nothing_was_sent(client)


@pytest.mark.parametrize("session_id", ["", 7])
async def test_ack_up_to_and_sync_refuse_a_session_id_that_is_no_id(
        rt, serve_gateway, connect, session_id) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "acks") as client:
        with pytest.raises(ValidationError, match="session_id"):
            await client.ack_up_to(1, session_id=session_id)
        with pytest.raises(ValidationError, match="session_id"):
            await client.sync(session_id)
        await _nothing_was_sent(client)


async def test_a_good_ack_up_to_still_acks(rt, serve_gateway, connect, wait_status) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "acks") as client:
        handle = await rt.notify(client.session_id, "hi")
        with trio.fail_after(20):
            [frame] = await client.receive_until(lambda f: f["type"] == "delivery", ack=False)
            await client.ack_up_to(frame["seq"], session_id=client.session_id)
            await wait_status(rt, handle.delivery_id, "sent")
