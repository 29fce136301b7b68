"""A listen host that resolves to more than one address (``localhost`` where the hosts file
names both ``::1`` and ``127.0.0.1``), with port 0: the gateway listens on one port on every
address, the one it reports, so a client reaches it at that port whichever address it uses."""

from __future__ import annotations

import trio

from tidings.channels import GatewayChannel, GatewayClient, GatewayConfig

from .conftest import TOKEN
from .names import NamedAddresses

_ADDRESSES = ("127.0.0.1", "127.0.0.2")  # both loopback on Linux


async def test_port_0_on_a_host_of_two_addresses_is_one_port_on_both(rt) -> None:
    previous = trio.socket.set_custom_hostname_resolver(NamedAddresses("two.test", _ADDRESSES))
    try:
        gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, host="two.test", port=0))
        try:
            async with gateway.serving() as port:
                for address in _ADDRESSES:
                    with trio.fail_after(10):
                        async with GatewayClient.connect(f"ws://{address}:{port}", token=TOKEN,
                                                         conversation="alpha") as client:
                            assert client.welcome["type"] == "welcome"
        finally:
            with trio.CancelScope(shield=True):
                await gateway.aclose()
    finally:
        trio.socket.set_custom_hostname_resolver(previous)
