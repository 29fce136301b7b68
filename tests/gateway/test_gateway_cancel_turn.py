"""``cancel_turn`` (the stop button) on the gateway: ``GatewayChannel`` finds the conversation
by its own ``conversation_for`` (the client's conversation name is the ``chat_id``, its
``hello.client`` the ``sender_id``), and the client of the cancelled turn gets the
``cancelled`` lifecycle frame with reason ``cancel_command``, and no answer in the chat."""

from __future__ import annotations

import trio


class HoldingAgent:
    """``hold`` streams a chunk, then waits until cancelled; anything else is echoed."""

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        await turn.send_chunk(f"working on {turn.text}")
        if turn.text == "hold":
            await trio.sleep_forever()


async def _until(client, predicate) -> list[dict]:  # type: ignore[no-untyped-def]
    with trio.fail_after(10):  # real time: the gateway runs over real sockets
        return await client.receive_until(predicate)


async def test_the_stop_button_cancels_a_clients_running_turn(rt, serve_gateway, connect,
                                                              is_frame) -> None:
    async with serve_gateway(rt, agent=HoldingAgent()) as (gateway, url), \
            connect(url, "alpha", client="web-1") as client:
        held = await client.message("hold")
        await _until(client, is_frame("lifecycle", event="text_chunk", message_id=held))
        # Another conversation's ids cancel nothing here.
        assert await gateway.cancel_turn(chat_id="beta", sender_id="web-1") == "nothing"
        assert await gateway.cancel_turn(chat_id="alpha", sender_id="web-1") == "cancelled"
        frames = await _until(client, is_frame("lifecycle", event="cancelled",
                                               message_id=held))
        assert frames[-1]["reason"] == "cancel_command"
        after = await client.message("after")
        frames += await _until(client, is_frame("lifecycle", event="completed",
                                                message_id=after))
        # Nothing was answered in the chat for the press (a /cancel would have been).
        assert [f for f in frames if f["type"] == "delivery" and f.get("command")] == []
        assert await gateway.cancel_turn(chat_id="alpha", sender_id="web-1") == "nothing"
