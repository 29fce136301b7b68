"""Device A's message waits behind a running turn; device B sends ``/clear``, which drops it.
A must still see its message's turn end: the ``cancelled`` lifecycle frame (reason ``clear``)
for its message id, as for a waiting turn ``/cancel`` cancelled; else a client other than
``tidings chat`` (which asks again by resending the id) waits for an end that never comes."""

from __future__ import annotations

from contextlib import asynccontextmanager

import trio

from tidings.channels import ChannelConfig, GatewayChannel, GatewayConfig

TOKEN = "gateway-test-token"


class HoldingAgent:
    """``hold`` streams a chunk, then waits until cancelled; anything else is echoed."""

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        await turn.send_chunk(f"working on {turn.text}")
        if turn.text == "hold":
            await trio.sleep_forever()


@asynccontextmanager
async def followup_gateway(rt):  # type: ignore[no-untyped-def]
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", dispatch_mode="followup"),
                             agent=HoldingAgent())
    try:
        async with gateway.serving() as port:
            yield f"ws://127.0.0.1:{port}"
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()


async def test_a_waiting_message_another_devices_clear_drops_gets_its_end_frame(
        rt, connect, is_frame) -> None:
    async with followup_gateway(rt) as url, \
            connect(url, "alpha", client="device-a") as device_a, \
            connect(url, "alpha", client="device-b") as device_b:
        with trio.fail_after(20):  # real time: the gateway runs over real sockets
            held = await device_a.message("hold")
            await device_a.receive_until(is_frame("lifecycle", event="text_chunk",
                                                  message_id=held))
            waiting = await device_a.message("are you there?")
            [*_, accepted] = await device_a.receive_until(is_frame("accepted", id=waiting))
            assert accepted["outcome"] == "queued"
            await device_b.message("/clear")
            frames = await device_a.receive_until(is_frame("lifecycle", event="cancelled",
                                                           message_id=waiting))
            assert frames[-1]["reason"] == "clear"
            assert frames[-1]["session_id"] == accepted_session(frames, held)
            # It ended as a turn cancelled before it began: started, then cancelled.
            mine = [frame["event"] for frame in frames
                    if frame["type"] == "lifecycle" and frame["message_id"] == waiting]
            assert mine == ["started", "cancelled"]
            # Not told it was "not answered": the user asked for the clear.
            assert not any("not answered" in frame.get("text", "") for frame in frames)
            # Its resend is a duplicate whose turn is over.
            await device_a.message("", message_id=waiting)
            [*_, again] = await device_a.receive_until(is_frame("accepted", id=waiting))
            assert again["duplicate"] is True
            assert again["running"] is False


def accepted_session(frames: list[dict], message_id: str) -> str:
    """The session of the turn that answered *message_id* (its cancelled frame's)."""
    [session_id] = {frame["session_id"] for frame in frames
                    if frame["type"] == "lifecycle" and frame["message_id"] == message_id}
    return session_id
