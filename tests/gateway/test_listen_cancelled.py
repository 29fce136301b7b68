"""A gateway cancelled while it starts listening closes every listener it opened.

With port 0 on a host of several addresses, the listeners first opened (one free port per
address) are closed and opened again on one port. A cancel landing on that close must still
close them all: one left open stays bound until the garbage collector finds it.
"""

from __future__ import annotations

import socket

import trio

from tidings.channels import GatewayChannel, GatewayConfig

from .conftest import TOKEN
from .names import NamedAddresses

_ADDRESSES = ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4")  # all loopback on Linux


class _Counted(trio.abc.SocketFactory):
    """Real sockets, remembered; *made* is set once every address has one."""

    def __init__(self) -> None:
        self.sockets: list[trio.socket.SocketType] = []
        self.made = trio.Event()

    def socket(self, family=socket.AF_INET, type=socket.SOCK_STREAM, proto=0):
        sock = trio.socket.from_stdlib_socket(socket.socket(family, type, proto))
        self.sockets.append(sock)
        if len(self.sockets) == len(_ADDRESSES):
            self.made.set()
        return sock


async def test_a_cancel_while_port_0_is_reopened_closes_every_listener(rt) -> None:
    factory = _Counted()
    previous_resolver = trio.socket.set_custom_hostname_resolver(
        NamedAddresses("four.test", _ADDRESSES))
    previous_factory = trio.socket.set_custom_socket_factory(factory)
    try:
        gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, host="four.test", port=0))
        try:
            with trio.fail_after(10):
                async with trio.open_nursery() as nursery:

                    async def cancel_once_all_are_bound(task_status) -> None:
                        # Once the last address is bound, the listeners of differing ports
                        # are being closed: the cancel lands on the first close or the next
                        # (this task may look one step late), with one listener still after.
                        task_status.started()
                        await factory.made.wait()
                        while factory.sockets[-1].getsockname()[1] == 0:
                            await trio.lowlevel.checkpoint()
                        nursery.cancel_scope.cancel()

                    await nursery.start(cancel_once_all_are_bound)
                    async with gateway.serving():
                        await trio.sleep_forever()
        finally:
            with trio.CancelScope(shield=True):
                await gateway.aclose()
    finally:
        trio.socket.set_custom_socket_factory(previous_factory)
        trio.socket.set_custom_hostname_resolver(previous_resolver)
    assert factory.made.is_set()
    still_open = [sock for sock in factory.sockets if sock.fileno() != -1]
    for sock in still_open:
        sock.close()
    assert still_open == []
