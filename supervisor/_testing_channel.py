"""An in-memory channel adapter: a real :class:`~tidings.channels.ChannelBase` whose platform
is a list, with controllable latency, stalls and failures (through a :class:`MemoryRoute`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from tidings.actors import Outbound
from tidings.channels import ChannelBase, ChannelConfig, Inbound, InboundOutcome
from tidings.channels import TaskLifecycleEvent as LifecycleEvent
from tidings.errors import ValidationError
from tidings.supervisor._callables import certainly_async
from tidings.supervisor._testing_route import MemoryRoute

__all__ = ["MemoryChannel"]


class MemoryChannel(ChannelBase):
    """A channel adapter over a :class:`MemoryRoute` (``platform``): ``outbounds`` lists what
    its platform accepted (deliveries and direct answers; ``platform.attempted`` has every
    try, a refused one too), ``events`` every task lifecycle event.

    ``platform.stall()`` / ``latency`` / ``fail`` control delivery as for a route; tests wait
    with :meth:`wait_for` instead of sleeping. ``config`` defaults to a channel named
    ``name`` with the default settings; ``agent`` to the config's (an echo agent).
    """

    def __init__(self, runtime: Any, config: ChannelConfig | None = None, agent: Any = None,
                 *, name: str = "memory") -> None:
        super().__init__(runtime, ChannelConfig(name) if config is None else config, agent)
        self.platform = MemoryRoute()
        self.outbounds: list[Outbound] = []
        self.events: list[LifecycleEvent] = []
        self._changed = trio.Event()

    async def deliver(self, outbound: Outbound) -> None:
        await self.platform.deliver(outbound)
        self.outbounds.append(outbound)
        self._notify()

    def on_task_lifecycle(self, event: LifecycleEvent) -> None:
        self.events.append(event)
        self._notify()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, predicate: Callable[[], object]) -> None:
        """Block until ``predicate()`` is true (checked after every delivery and event).

        *predicate* is a plain function of no argument (an ``async def`` one answers a
        coroutine, which is true at once): else :class:`~tidings.errors.ValidationError`
        naming ``predicate``."""
        if not callable(predicate) or certainly_async(predicate):
            raise ValidationError("predicate", f"must be a plain function of no argument (def, "
                                               f"not async def), got {predicate!r:.80}")
        while not predicate():
            await self._changed.wait()
        await trio.lowlevel.checkpoint()

    async def say(self, text: str, *, chat_id: str = "chat", sender_id: str = "user",
                  message_id: str | None = None,
                  thread_id: str | None = None) -> InboundOutcome:
        """``handle_inbound`` of a message with these ids."""
        return await self.handle_inbound(Inbound(chat_id=chat_id, sender_id=sender_id,
                                                 text=text, message_id=message_id,
                                                 thread_id=thread_id))

    def texts(self, kind: str | None = None) -> list[str]:
        """The texts delivered so far, in order; only those of *kind* (``message``,
        ``progress``, ``notice``) when it is given."""
        return [o.text for o in self.outbounds if kind is None or o.kind == kind]
