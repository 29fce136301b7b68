"""A seeded client of an acking route, for :func:`~tidings.testing.run_chaos`.

An acking route (``ack_window = N``, the gateway's kind) leaves each row it was given
``sending`` until its client acks it through ``rt.confirm``; a client that drops makes them
``unknown`` (``rt.abandon_unacked``). :class:`AckingClient` plays that client over a
:class:`~tidings.testing.ReconcilingMemoryRoute` with an ``ack_window``: whatever the route
accepted, it acks at once, one at a time, late (so more pile up, acked in a batch) or never
before dropping, as its RNG says; so the lane's ack-window and byte waits are exercised.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import trio

from tidings.actors import Runtime
from tidings.errors import TidingsError
from tidings.supervisor._testing_route import MemoryRoute

__all__ = ["AckingClient"]


class AckingClient:
    """The client behind one session's acking *route*; :meth:`run` until :meth:`stop`.

    ``failed`` is told of each ``confirm`` / ``abandon_unacked`` that raised (the runtime under
    faults); that ack or drop did not happen, so it is tried again. With ``final`` (once
    stopped) the client acks what it still holds, drops, or just goes (its rows stay
    ``sending`` until the runtime's next start makes them ``unknown``), as its RNG says.
    Without ``dropping`` it never drops (every row it is given ends ``sent``). ``drops``
    counts its ``abandon_unacked`` calls that went through.
    """

    def __init__(self, rt: Runtime, session_id: str, route: MemoryRoute, rng: random.Random,
                 failed: Callable[[BaseException], None], *, final: bool = True,
                 dropping: bool = True) -> None:
        self.rt = rt
        self.session_id = session_id
        self.route = route
        self.rng = rng
        self.failed = failed
        self.final = final
        self.dropping = dropping
        self.handled = len(route.delivered)  # what it was given before it started: not its own
        self.acked = 0
        self.drops = 0
        self._stopped = False
        self._waiting: trio.CancelScope | None = None

    def stop(self) -> None:
        """Finish: settle what is held (see ``final``) and return. Sync."""
        self._stopped = True
        if self._waiting is not None:
            self._waiting.cancel(reason="the client is done")

    async def run(self) -> None:
        while True:
            pending = [outbound.delivery_id for outbound in self.route.delivered[self.handled:]]
            if self._stopped:
                if pending and self.final:
                    roll = self.rng.random()
                    if roll < 0.4:
                        await self._ack(pending)
                    elif roll < 0.7 and self.dropping:
                        await self._drop(pending)
                return
            if not pending:
                with trio.CancelScope() as self._waiting:
                    await self.route.wait_delivered(self.handled + 1)
                self._waiting = None
                continue
            roll = self.rng.random()
            if roll < 0.25:  # late: more may come meanwhile, acked together
                await trio.sleep(self.rng.choice((0.0, 0.001, 0.01)))
            elif roll < 0.35 and self.dropping:
                await self._drop(pending)
            elif roll < 0.55:
                await self._ack(pending[:1])
            else:
                await self._ack(pending)

    async def _ack(self, ids: list[str]) -> bool:
        try:
            moved = await self.rt.confirm(ids)
        except TidingsError as exc:
            self.failed(exc)
            await trio.sleep(0.001)  # the runtime is failing: not a busy loop
            return False
        self.handled += len(ids)
        self.acked += len(moved)
        return True

    async def _drop(self, pending: list[str]) -> None:
        """The connection went; the client comes back and, half the time, tells the runtime
        it has what it was given (acks them, ``unknown`` by now)."""
        try:
            await self.rt.abandon_unacked(self.session_id)
        except TidingsError as exc:
            self.failed(exc)
            await trio.sleep(0.001)
            return
        self.drops += 1
        if self.rng.random() < 0.5:
            if not await self._ack(pending):
                return
        else:
            self.handled += len(pending)
