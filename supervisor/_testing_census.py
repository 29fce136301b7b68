"""Censuses of what a run may leak: trio tasks and open memory channels.

Take one before the run; after it, :meth:`leaked` lists what was created since and is still
there. Tasks are counted from ``trio.lowlevel.current_root_task()`` down through every
nursery; channels are found with the garbage collector (only channels something still
references, that are still open at both ends or have a waiting task, count).
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import trio

__all__ = ["ChannelCensus", "TaskCensus", "live_tasks"]


def live_tasks() -> Iterator[trio.lowlevel.Task]:
    """Every task of the current run, from the root task down."""
    stack = [trio.lowlevel.current_root_task()]
    while stack:
        task = stack.pop()
        if task is None:
            continue
        yield task
        for nursery in task.child_nurseries:
            stack.extend(nursery.child_tasks)


class TaskCensus:
    """The tasks alive when it was taken. Call from inside ``trio.run``."""

    def __init__(self, tasks: set[trio.lowlevel.Task]) -> None:
        self.tasks = tasks

    @classmethod
    def take(cls) -> TaskCensus:
        """Count the tasks of this trio run alive now (call inside ``trio.run``)."""
        return cls(set(live_tasks()))

    def leaked(self) -> list[trio.lowlevel.Task]:
        """Tasks alive now that were not when the census was taken."""
        return [task for task in live_tasks() if task not in self.tasks]


_ENDPOINT_TYPES = frozenset({trio.MemorySendChannel, trio.MemoryReceiveChannel})
"""Both classes are ``@final``, so an exact type test finds every endpoint; ``isinstance``
would go through the ABC machinery for each of the hundreds of thousands of objects the
collector tracks in a test process, and made the census most of a short run's time."""


def _channels() -> list[trio.MemorySendChannel[object] | trio.MemoryReceiveChannel[object]]:
    return [obj for obj in gc.get_objects() if type(obj) in _ENDPOINT_TYPES]


class ChannelCensus:
    """The memory channel endpoints alive when it was taken.

    It holds weak references only: an endpoint that was there at the census and has been
    collected since cannot have its id taken for one of the old endpoints. Collecting is the
    slow part of a census (tens of milliseconds on a test process's heap), so it is done only
    when it can change the answer: :meth:`take` does not need it (garbage endpoints counted
    as already there are never reported), and :meth:`leaked` collects only when a first look
    finds a candidate, which may be garbage nothing references."""

    def __init__(self, endpoints: dict[int, weakref.ref[object]]) -> None:
        self._endpoints = endpoints

    @classmethod
    def take(cls) -> ChannelCensus:
        """Note the memory channel endpoints alive now (weakly: see the class docstring)."""
        return cls({id(endpoint): weakref.ref(endpoint) for endpoint in _channels()})

    def _known(self, endpoint: object) -> bool:
        ref = self._endpoints.get(id(endpoint))
        return ref is not None and ref() is endpoint

    def _candidates(self) -> list[str]:
        found = []
        states: set[int] = set()
        for endpoint in _channels():
            state = id(getattr(endpoint, "_state", endpoint))  # endpoints of one channel
            if self._known(endpoint) or state in states:
                continue
            states.add(state)
            stats = endpoint.statistics()
            live = stats.open_send_channels and stats.open_receive_channels
            if live or stats.tasks_waiting_send or stats.tasks_waiting_receive:
                found.append(f"{type(endpoint).__name__} (buffer {stats.current_buffer_used}/"
                             f"{stats.max_buffer_size}, {stats.open_send_channels} send and "
                             f"{stats.open_receive_channels} receive ends open)")
        return found

    def leaked(self) -> list[str]:
        """Channels created since, still referenced, that are still a live pipe (a send end
        and a receive end open) or have a task waiting on them. (One side closed is harmless:
        the other gets ``EndOfChannel`` or ``BrokenResourceError`` at once.)"""
        if not self._candidates():
            return []  # collecting only removes endpoints: it cannot find more
        gc.collect()  # a candidate may be garbage in a reference cycle: only referenced count
        return self._candidates()
