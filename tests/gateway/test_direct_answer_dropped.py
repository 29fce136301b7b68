"""A command's direct answer (a ``notice`` frame: no session) lost with its connection.

With no session (after a ``/clear``), the answer to ``/clear``, ``/cancel`` or a refused
``/resume`` is an ephemeral ``notice`` frame, queued on the conversation's connections. It
names the message id it answers, and stays owed to a resend of that id until the client acks
it (``{"type": "ack", "message_ids": [...]}``): a connection that drops with it still queued
(the client never read it) must not leave the client's resend of the id, a ``duplicate``,
with no answer. The notice is simulated lost by a ``deliver()`` that drops it, as a dying
connection's queue does.
"""

from __future__ import annotations

from typing import Any

import trio

from tidings.channels import GatewayChannel, GatewayConfig

from .conftest import TOKEN

CLEARED = "Cleared. Your next message starts a new session."


class Dropping(GatewayChannel):
    """Drops the next direct answer (as a connection that died with it in its queue)."""

    drop = False

    async def deliver(self, outbound: Any) -> None:
        if self.drop and outbound.session_id is None:
            self.drop = False
            await trio.lowlevel.checkpoint()
            return
        await super().deliver(outbound)


def _accepted(message_id: str) -> Any:
    return lambda f: f["type"] == "accepted" and f["id"] == message_id


async def test_a_resend_gets_the_direct_answer_its_dropped_connection_lost(
        rt, connect) -> None:
    gateway = Dropping(rt, GatewayConfig(token=TOKEN, port=0))
    try:
        async with gateway.serving() as port:
            url = f"ws://127.0.0.1:{port}"
            with trio.fail_after(10):
                async with connect(url, "alpha") as client:
                    await client.message("/clear", message_id="m1")  # now no session
                    await client.receive_until(_accepted("m1"))
                    gateway.drop = True
                    await client.message("/clear", message_id="m2")  # answered direct: lost
                    lost = await client.receive_until(_accepted("m2"))
                assert CLEARED not in [f.get("text") for f in lost]
                async with connect(url, "alpha") as client:  # reconnects, resends m2
                    await client.message("/clear", message_id="m2")
                    frames = await client.receive_until(_accepted("m2"))
                    assert frames[-1]["duplicate"] is True
                    await client.message("/status", message_id="probe")
                    frames += await client.receive_until(
                        lambda f: str(f.get("text")).startswith("Session:"))
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert [f.get("text") for f in frames].count(CLEARED) == 1, frames
