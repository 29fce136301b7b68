"""``GatewayClient.connect(welcome_timeout=)`` takes any number of seconds > 0: ``inf`` and an
integer past a float's range both mean no bound on the opening. Before, such an integer (a
number of seconds > 0, so past the check) failed in an OverflowError naming nothing, before
connecting."""

from __future__ import annotations

import math

import pytest
import trio

from tidings.channels import GatewayClient


@pytest.mark.parametrize("unbounded", [math.inf, 10 ** 400], ids=["inf", "huge-int"])
async def test_an_unbounded_welcome_timeout_connects(rt, serve_gateway, unbounded) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        with trio.fail_after(20):
            async with GatewayClient.connect(url, token="gateway-test-token",
                                             conversation="unbounded",
                                             welcome_timeout=unbounded) as client:
                assert isinstance(client.session_id, str)
                await client.aclose()
