"""A hello is taken whatever ``max_frame_bytes`` says: GatewayConfig takes any limit from 256
bytes and any token of MIN_TOKEN_LENGTH characters or more, but the hello was held to that
limit like any frame: a token, conversation name or session id that made it longer got
"unauthorized: the first frame must be a hello with a token" (4001, as if the token were
wrong), or, past four times the limit, the websocket's own 1009: a server that started and
admitted no one. The hello, read once per connection, has an allowance of its own
(``HELLO_MAX_BYTES``, the default limit); every later frame keeps the configured one."""

from __future__ import annotations

import pytest
import trio

from tidings.channels import GatewayChannel, GatewayClient, GatewayConfig


@pytest.mark.parametrize("token_length", [300, 2000])
async def test_a_hello_longer_than_max_frame_bytes_is_taken(rt, token_length) -> None:
    token = "k" * token_length
    gateway = GatewayChannel(rt, GatewayConfig(token=token, port=0, max_frame_bytes=256))
    try:
        async with gateway.serving() as port:
            url = f"ws://127.0.0.1:{port}"
            with trio.fail_after(10):
                async with GatewayClient.connect(url, token=token, conversation="a" * 200,
                                                 client="a phone") as client:
                    assert client.welcome["max_frame_bytes"] == 256
                    session_id = client.welcome["session_id"]
                async with GatewayClient.connect(url, token=token, conversation="a" * 200,
                                                 session_id=session_id, after_seq=0) as again:
                    assert again.welcome["session_id"] == session_id
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()

