"""The README (``gateway.token_file``): the token file is read once, at start; a file changed
while the server runs takes effect at the next start, and until then the new token is
refused ``4001`` while the one read at start is still welcomed."""

from __future__ import annotations

import pytest
import trio

from tidings.channels import GatewayClient, GatewayClosed
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl


async def _welcomed(url: str, token: str) -> None:
    async with GatewayClient.connect(url, token=token, conversation="a") as client:
        assert client.welcome["type"] == "welcome"


async def _refused(url: str, token: str) -> None:
    with pytest.raises(GatewayClosed) as closed:
        await _welcomed(url, token)
    assert (closed.value.code, closed.value.reason) == (4001, "unauthorized: bad token")


async def test_a_token_file_changed_while_serving_counts_from_the_next_start(tmp_path) -> None:
    token_file = tmp_path / "serve.token"
    token_file.write_text("the-first-token\n")
    config = load_config(db=str(tmp_path / "serve.db"), port=0, workspace=str(tmp_path),
                         token_file=str(token_file))
    control = StopControl()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            info = await nursery.start(serve, config, control)
            token_file.write_text("the-second-token\n")
            await _refused(info.url, "the-second-token")
            await _welcomed(info.url, "the-first-token")
            control.request("test")
        control = StopControl()
        async with trio.open_nursery() as nursery:
            info = await nursery.start(serve, config, control)
            await _welcomed(info.url, "the-second-token")
            await _refused(info.url, "the-first-token")
            control.request("test")

