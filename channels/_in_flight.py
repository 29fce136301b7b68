"""Message ids being handled now, one handler at a time each (:class:`InFlight`).

A platform (or a gateway client on a new connection) delivers a message again while its first
delivery is still being handled. Answered ``duplicate`` at once, the copy would be
acknowledged for a message the first may still fail to handle; so the copy waits for the
first to end, then reads the durable record (``ChannelBase._inbound_once`` and the gateway's
``on_message`` both do).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Hashable

import trio

__all__ = ["InFlight"]


class InFlight:
    """Keys held by the handler now handling them; a second handler of a key waits."""

    def __init__(self) -> None:
        self._ends: dict[Hashable, trio.Event] = {}

    @contextlib.asynccontextmanager
    async def handling(self, key: Hashable) -> AsyncIterator[None]:
        """Hold *key* for the body, once no other handler holds it (waiting for each that
        does to end). No checkpoint when it is free: the caller's look-up is the first."""
        while (first := self._ends.get(key)) is not None:
            await first.wait()
        done = self._ends[key] = trio.Event()
        try:
            yield
        finally:
            del self._ends[key]
            done.set()
