"""A host name of several addresses, for tests of listening on every address of a name."""

from __future__ import annotations

import socket
from collections.abc import Sequence

import trio

__all__ = ["NamedAddresses"]


class NamedAddresses(trio.abc.HostnameResolver):
    """Resolves *name* to *addresses* (IPv4 loopback ones: all work on Linux), as a hosts file
    may ``localhost`` to ``::1`` and ``127.0.0.1``; any other name as the system does.
    Install with ``trio.socket.set_custom_hostname_resolver``."""

    def __init__(self, name: str, addresses: Sequence[str]) -> None:
        self.names = (name, name.encode())
        self.addresses = tuple(addresses)

    async def getaddrinfo(self, host, port, family=0, type=0, proto=0, flags=0):
        if host in self.names:
            return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "",
                     (address, int(port or 0))) for address in self.addresses]
        return await trio.to_thread.run_sync(socket.getaddrinfo, host, port, family, type,
                                             proto, flags)

    async def getnameinfo(self, sockaddr, flags):
        raise NotImplementedError
