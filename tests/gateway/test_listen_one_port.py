"""A listen host that resolves to more than one address (``localhost`` where the hosts file
names both ``::1`` and ``127.0.0.1``), with port 0: the gateway listens on one port on every
address, the one it reports, so a client reaches it at that port whichever address it uses."""

from __future__ import annotations

import socket

import trio

from tidings.channels import GatewayChannel, GatewayClient, GatewayConfig

from .conftest import TOKEN

_ADDRESSES = ("127.0.0.1", "127.0.0.2")  # both loopback on Linux


class _TwoAddresses(trio.abc.HostnameResolver):
    """Resolves ``two.test`` to both loopback addresses (as a hosts file may ``localhost``)."""

    async def getaddrinfo(self, host, port, family=0, type=0, proto=0, flags=0):
        if host in ("two.test", b"two.test"):
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                     (address, int(port or 0))) for address in _ADDRESSES]
        return await trio.to_thread.run_sync(socket.getaddrinfo, host, port, family, type,
                                             proto, flags)

    async def getnameinfo(self, sockaddr, flags):
        raise NotImplementedError


async def test_port_0_on_a_host_of_two_addresses_is_one_port_on_both(rt) -> None:
    previous = trio.socket.set_custom_hostname_resolver(_TwoAddresses())
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
