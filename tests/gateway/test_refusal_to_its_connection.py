"""A message from a client the channel's ``access`` does not allow is refused with a notice
sent to that client's connection only.

Broadcast to the conversation, as the answer to a command is, every other device of it (an
allowed client's too) was told "Sorry, you are not allowed to use this channel." for a
message it never sent: its user took it for a refusal of their own."""

from __future__ import annotations

import trio

from tidings.channels import REFUSAL, ChannelConfig, GatewayChannel, GatewayConfig

from .conftest import TOKEN, frame_is


async def test_only_the_refused_connection_gets_the_refusal(rt, connect) -> None:
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", access=["alice"]))
    try:
        with trio.fail_after(30):  # hang guard
            async with gateway.serving() as port, \
                    connect(f"ws://127.0.0.1:{port}", "team", client="alice") as alice, \
                    connect(f"ws://127.0.0.1:{port}", "team", client="mallory") as mallory:
                message_id = await mallory.message("hi")
                mallorys = await mallory.receive_until(frame_is("accepted", id=message_id))
                # Mallory's refusal was queued on the connections before its accepted: a
                # pong alice asks for after that comes after anything it was sent.
                await alice.send({"type": "ping"})
                alices = await alice.receive_until(frame_is("pong"))
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert mallorys[-2:] == [{"type": "notice", "text": REFUSAL, "command": None},
                             {"type": "accepted", "id": message_id, "outcome": "refused"}]
    assert [frame for frame in alices if frame["type"] == "notice"] == []
