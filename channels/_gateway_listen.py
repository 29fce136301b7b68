"""The gateway's TCP connections before they become clients (the websocket upgrade).

trio-websocket waits for a new TCP connection's upgrade request up to its connect timeout
(10 s here) inside the gateway's nursery, before it calls the gateway's handler. So a peer
that connects and never sends the upgrade (a port scanner, a health check that only opens
the port, a client stuck halfway) would hold a stop of the gateway up that long: leaving
``serving()`` waits for every task of that nursery.

:class:`Handshakes` remembers every stream its listeners accepted (weakly) and counts the
handler calls in flight (connections that upgraded: admitted, or being refused). When the
gateway stops, :meth:`Handshakes.close_rest` waits for the handlers only (each bounded by its
own close), then closes every stream still open (the ones that never upgraded: their peer
reads end of stream at once) and cancels what still waits for them.

:func:`open_listeners` opens the listeners themselves: one port on every address of the host.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager

import trio

__all__ = ["Handshakes", "open_listeners"]

_PORT_TRIES = 8
"""Times :func:`open_listeners` looks for a free port every address has."""


async def open_listeners(port: int, host: str) -> list[trio.SocketListener]:
    """``trio.open_tcp_listeners(port, host=host)``, all on one port.

    With port 0 trio gives each address the host resolves to a free port of its own, so a host
    of several addresses (``localhost`` where the hosts file names ``::1`` and ``127.0.0.1``)
    listened on as many ports, and the one the gateway reports (and listens on again after a
    restart) was one address's only: a client that reached the host at another address was
    refused. Here every address then listens on the first one's port, found again (up to
    ``_PORT_TRIES`` times) if that port is taken on another address. Raises ``OSError`` as
    trio does, or when no port free on every address was found."""
    for _ in range(_PORT_TRIES):
        listeners = await trio.open_tcp_listeners(port, host=host)
        if port or len({_port_of(listener) for listener in listeners}) == 1:
            return listeners
        first = _port_of(listeners[0])
        with trio.CancelScope(shield=True):  # every one closed, a cancel meanwhile or not
            for listener in listeners:  # (bounded: a close that waits for nothing)
                await listener.aclose()
        try:
            return await trio.open_tcp_listeners(first, host=host)
        except OSError:
            continue  # taken on another address (or meanwhile): another free port
    raise OSError(f"no free port on every address of {host!r} in {_PORT_TRIES} tries")


def _port_of(listener: trio.SocketListener) -> int:
    return int(listener.socket.getsockname()[1])


class _Tracked(trio.abc.Listener[trio.SocketStream]):
    """A TCP listener whose accepted streams are remembered by :class:`Handshakes`."""

    def __init__(self, listener: trio.SocketListener, streams: weakref.WeakSet[trio.SocketStream]
                 ) -> None:
        self.listener = listener
        self.streams = streams

    async def accept(self) -> trio.SocketStream:
        stream = await self.listener.accept()
        self.streams.add(stream)
        return stream

    async def aclose(self) -> None:
        await self.listener.aclose()

    def __repr__(self) -> str:
        return f"<tracked {self.listener.socket.getsockname()!r}>"


class Handshakes:
    """The accepted streams and the handlers in flight of one ``serving()``."""

    def __init__(self) -> None:
        self.streams: weakref.WeakSet[trio.SocketStream] = weakref.WeakSet()
        self.handling = 0
        self._idle = trio.Event()
        self._idle.set()

    def track(self, listeners: list[trio.SocketListener]
              ) -> list[trio.abc.Listener[trio.SocketStream]]:
        """*listeners*, each remembering the streams it accepts here."""
        return [_Tracked(listener, self.streams) for listener in listeners]

    @contextmanager
    def handler(self) -> Iterator[None]:
        """Around the gateway's handler: the connection upgraded, a stop waits for it."""
        self.handling += 1
        if self._idle.is_set():
            self._idle = trio.Event()
        try:
            yield
        finally:
            self.handling -= 1
            if not self.handling:
                self._idle.set()

    async def close_rest(self, scope: trio.CancelScope) -> None:
        """Once no handler runs: close every stream still open (connections that never
        upgraded) and cancel *scope* (the nursery their handshake waits run in)."""
        while self.handling:
            await self._idle.wait()
        # No checkpoint from here on: no handler can start in between.
        for stream in list(self.streams):
            stream.socket.close()
        scope.cancel(reason="the gateway is stopping: connections that never upgraded close")
