"""Test children for the supervision kernel: they write what happens to them in a journal."""

from __future__ import annotations

from collections.abc import Callable

import attrs
import pytest
import trio
import trio.testing

from tidings.supervisor import ChildContext, ChildSpec, Intensity, Supervisor, open_supervisor
from tidings.testing import live_tasks as every_task


class Boom(Exception):
    """What test children raise when told to fail."""


@attrs.define
class Journal:
    """Events in the order they happened: ``(kind, child, incarnation, *detail)``."""

    events: list[tuple[object, ...]] = attrs.Factory(list)
    times: dict[tuple[str, str, int], float] = attrs.Factory(dict)
    _changed: trio.Event = attrs.Factory(trio.Event)

    def add(self, kind: str, ctx: ChildContext, *detail: object) -> None:
        self.events.append((kind, ctx.name, ctx.incarnation, *detail))
        self.times.setdefault((kind, ctx.name, ctx.incarnation), trio.current_time())
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, *event: object) -> float:
        """Wait until an event starting with ``event`` is journaled; return when it was.

        Fails (on the mock clock, at once) instead of hanging when it never comes.
        """
        with trio.fail_after(10_000):
            while not any(logged[:len(event)] == event for logged in self.events):
                await self._changed.wait()
        return self.times[event[:3]]  # type: ignore[index]

    def of(self, *kinds: str) -> list[tuple[object, ...]]:
        return [event for event in self.events if event[0] in kinds]

    def worker(self, *, fail_at_start: Callable[[int], bool] = lambda n: False,
               fail_at_shutdown: bool = False, ready_after: float = 0.0,
               stuck_at_shutdown: bool = False) -> Callable[..., object]:
        """A child that logs each message; ``"crash"`` makes it raise, ``"return"`` return.

        It records ``start`` / ``ready`` / ``msg`` / ``stop`` (its loop ended because the
        mailbox was closed) and ``cancelled`` (with trio's reason and the time).
        """
        journal = self

        async def work(ctx: ChildContext, *,
                       task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
            journal.add("start", ctx)
            try:
                if ready_after:
                    await trio.sleep(ready_after)
                if fail_at_start(ctx.incarnation):
                    raise Boom(f"{ctx.name} failed to start")
                journal.add("ready", ctx)
                task_status.started()
                async for message in ctx.mailbox:
                    journal.add("msg", ctx, message)
                    if message == "crash":
                        raise Boom(f"{ctx.name} crashed on a message")
                    if message == "return":
                        return
                journal.add("stop", ctx)
                if stuck_at_shutdown:
                    await trio.sleep_forever()
                if fail_at_shutdown:
                    raise Boom(f"{ctx.name} failed at shutdown")
            except trio.Cancelled as exc:
                journal.add("cancelled", ctx, exc.reason, trio.current_time())
                raise

        return work


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """Jump the moment every task is blocked: the kernel's tests do no I/O, so an idle loop
    always means waiting for a timer (the root conftest waits a little, for tests with I/O)."""
    return trio.testing.MockClock(autojump_threshold=0)


WATCHDOG_SECONDS = 100_000.0
"""Trio seconds after which a test is declared hung (at once, on the autojump clock)."""


@pytest.fixture
async def journal(nursery: trio.Nursery) -> Journal:
    """A fresh journal; the test fails, instead of hanging, if it never finishes."""

    async def watchdog() -> None:
        await trio.sleep(WATCHDOG_SECONDS)
        raise AssertionError(f"test still running after {WATCHDOG_SECONDS} trio seconds")

    nursery.start_soon(watchdog)
    return Journal()


def task_tree() -> set[trio.lowlevel.Task]:
    """Every task alive under the root task right now."""
    return set(every_task())


@pytest.fixture
def live_tasks() -> Callable[[], set[trio.lowlevel.Task]]:
    return task_tree


async def crash_a_in_the_tick_of_an_outside_cancel(
        specs: list[ChildSpec], *, beside: Callable[[Supervisor], object] | None = None,
        cancelling: Callable[[], object] | None = None) -> Supervisor:
    """Run a supervisor of *specs* (child ``a`` crashes on its first message) in a scope, and
    in one tick send ``a`` that message and cancel the scope from a task beside the
    supervisor (*cancelling*, sync, runs right before that cancel). *beside*, if given, is
    started first as a task of its own with the supervisor (``sup.stop_child`` of another
    child, say). Returns the supervisor once the cancel has gone through."""
    with trio.CancelScope() as outside:
        async with open_supervisor(specs, intensity=Intensity(max_restarts=5,
                                                              period=60.0)) as sup:
            go = trio.Event()

            async def cancel_it() -> None:
                await go.wait()
                if cancelling is not None:
                    cancelling()
                outside.cancel()

            async with trio.open_nursery() as nursery:
                if beside is not None:
                    nursery.start_soon(beside, sup)
                nursery.start_soon(cancel_it)
                await trio.testing.wait_all_tasks_blocked()
                sup.mailbox("a").send_nowait("crash")  # no checkpoint between: one tick
                go.set()
                await trio.sleep_forever()
    assert outside.cancelled_caught
    return sup
