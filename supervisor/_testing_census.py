"""Censuses of what a run may leak: trio tasks and open memory channels.

Take one before the run; after it, :meth:`leaked` lists what was created since and is still
there. Tasks are counted from ``trio.lowlevel.current_root_task()`` down through every
nursery; channels are found with the garbage collector (only channels something still
references, that are still open at both ends or have a waiting task, count).
"""

from __future__ import annotations

import gc
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
        return cls(set(live_tasks()))

    def leaked(self) -> list[trio.lowlevel.Task]:
        """Tasks alive now that were not when the census was taken."""
        return [task for task in live_tasks() if task not in self.tasks]


def _channels() -> list[trio.MemorySendChannel[object] | trio.MemoryReceiveChannel[object]]:
    return [obj for obj in gc.get_objects()
            if isinstance(obj, trio.MemorySendChannel | trio.MemoryReceiveChannel)]


class ChannelCensus:
    """The memory channel endpoints alive when it was taken."""

    def __init__(self, ids: set[int], keep: list[object]) -> None:
        self.ids = ids
        self._keep = keep  # so that an id is not reused by a new endpoint

    @classmethod
    def take(cls) -> ChannelCensus:
        gc.collect()
        endpoints = _channels()
        return cls({id(endpoint) for endpoint in endpoints}, list(endpoints))

    def leaked(self) -> list[str]:
        """Channels created since, still referenced, that are still a live pipe (a send end
        and a receive end open) or have a task waiting on them. (One side closed is harmless:
        the other gets ``EndOfChannel`` or ``BrokenResourceError`` at once.)"""
        gc.collect()
        found = []
        states: set[int] = set()
        for endpoint in _channels():
            state = id(getattr(endpoint, "_state", endpoint))  # endpoints of one channel
            if id(endpoint) in self.ids or state in states:
                continue
            states.add(state)
            stats = endpoint.statistics()
            live = stats.open_send_channels and stats.open_receive_channels
            if live or stats.tasks_waiting_send or stats.tasks_waiting_receive:
                found.append(f"{type(endpoint).__name__} (buffer {stats.current_buffer_used}/"
                             f"{stats.max_buffer_size}, {stats.open_send_channels} send and "
                             f"{stats.open_receive_channels} receive ends open)")
        return found
