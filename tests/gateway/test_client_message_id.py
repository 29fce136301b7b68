"""``GatewayClient.message(text, message_id=...)``: the id given is the one sent. An empty one
was taken for none given and replaced by a fresh random id: a host that passes its platform's
message id (for the gateway to run a retry once) and had an empty one got a new id at each
retry, every retry a new turn, and nothing said the id was not used."""

from __future__ import annotations

import trio


async def test_an_empty_message_id_is_sent_as_given_and_refused_by_name(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "ids") as client:
        with trio.fail_after(20):
            sent = await client.message("hello", message_id="")
            frames = await client.receive_until(
                lambda frame: frame.get("type") in ("accepted", "error"))
    assert sent == ""
    assert frames[-1]["type"] == "error", frames
    assert frames[-1]["field"] == "id"
    assert frames[-1]["ref"] == ""
