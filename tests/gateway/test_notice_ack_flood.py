"""An ``ack`` by ``message_ids`` that acks no notice waiting for one is charged.

Every frame a client sends is charged to its ``rate`` but an ack of what it was sent (its
deliveries, a notice answering a message: free, so acking never costs a client its rate). An
ack by ``message_ids`` was free whatever it named: a client could send such frames, up to
1,000 ids each, as fast as it liked and never be closed ``4029``, as an ack by ``up_to_seq``
that acks nothing of its own is (test_protocol_edges.py). One that acks nothing waiting now
costs one frame, as an ack of unknown delivery ids does.
"""

from __future__ import annotations

from typing import Any

import pytest

from tidings.channels import GatewayClosed

from ..real_time import fail_after_real


def _accepted(message_id: str) -> Any:
    return lambda f: f["type"] == "accepted" and f["id"] == message_id


async def _read_until(client: Any, frame_type: str) -> None:
    while (await client.receive())["type"] != frame_type:
        pass


async def _flood_then_sync(client: Any) -> None:
    """Ten acks of notices nobody waits an ack for, then a ``sync``, read until ``synced``
    (answered only if the flood was let through; the server may close during the flood)."""
    for _ in range(10):
        await client.ack_notices("never-sent", "nor-this")
    await client.sync()
    await _read_until(client, "synced")


async def test_acks_of_notices_not_waiting_are_charged(
        rt, serve_gateway, connect, mock_clock) -> None:
    with fail_after_real(60):  # hang guard in real seconds: mock_clock moves only at jump()
        async with serve_gateway(rt, rate=1, burst=3) as (_gateway, url), \
                connect(url, "alpha") as client:
            with pytest.raises(GatewayClosed) as closed:
                await _flood_then_sync(client)
            assert closed.value.code == 4029


async def test_an_ack_of_a_notice_waiting_for_it_is_free(
        rt, serve_gateway, connect, mock_clock) -> None:
    with fail_after_real(60):
        async with serve_gateway(rt, rate=1, burst=3) as (_gateway, url), \
                connect(url, "alpha") as client:
            await client.message("/clear", message_id="m1")  # 1 of 3: in the session
            await client.receive_until(_accepted("m1"))
            await client.message("/clear", message_id="m2")  # 2 of 3: a direct notice
            frames = await client.receive_until(_accepted("m2"))  # acks its notice: free
            assert [f["message_id"] for f in frames if f["type"] == "notice"] == ["m2"]
            await client.sync()  # 3 of 3: answered, so that ack was free
            await _read_until(client, "synced")
            await client.sync()  # 4 of 3
            with pytest.raises(GatewayClosed) as closed:
                await _read_until(client, "synced")
            assert closed.value.code == 4029
