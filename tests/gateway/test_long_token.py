"""A token the server takes is one its clients can say hello with, however long: GatewayConfig
(and a token file, up to MAX_TOKEN_FILE_BYTES) takes any printable token of at least
MIN_TOKEN_LENGTH characters, but the hello refused a token over 1000 characters (bad hello,
4000) after it had matched: a server that started and admitted no one, its right token
refused as a bad field."""

from __future__ import annotations

import pytest
import trio

from tidings.channels import GatewayChannel, GatewayClient, GatewayClosed, GatewayConfig
from tidings.supervisor._token import MAX_TOKEN_FILE_BYTES


@pytest.mark.parametrize("length", [1000, 1001, MAX_TOKEN_FILE_BYTES])
async def test_a_long_token_the_server_takes_admits_its_clients(rt, length) -> None:
    token = ("k" * length)
    gateway = GatewayChannel(rt, GatewayConfig(token=token, port=0))
    try:
        async with gateway.serving() as port:
            url = f"ws://127.0.0.1:{port}"
            with trio.fail_after(10):
                async with GatewayClient.connect(url, token=token, conversation="alpha") as c:
                    assert c.welcome["type"] == "welcome"
                with pytest.raises(GatewayClosed) as refused:  # still checked
                    async with GatewayClient.connect(url, token=token[:-1] + "x",
                                                     conversation="alpha"):
                        pass
                assert refused.value.code == 4001
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
