"""one_for_all / rest_for_one: a crash in the tick its stop comes in is no restart, either order.

README ("Children", "Changing children while it runs"): a child that fails as a cancellation
from outside the block unwinds it, or one being stopped, is no crash: recorded
``shutdown_error``, never restarted nor counted. Under the group strategies a crash was
decided as trio ran it. When the stop came later in the same tick (a scope around the
supervisor cancelled, a sibling's ``KeyboardInterrupt``, ``stop_child`` of that child), the
crash had been recorded ``restart`` and counted already, and the restart never came (the
helper was cancelled, or found the child gone); when the stop came earlier in the tick, it
was ``shutdown_error``. The log and ``statistics().restarts`` fell to trio's run order. The
group strategies now decide a tick's crashes at its end too, as ``one_for_one`` does.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.supervisor import ChildSpec, Intensity, open_supervisor

from .conftest import Boom

ROUNDS = 64
"""Runs to find the wanted run order (trio picks one of two at random: 2**-64 to miss it)."""


def _child(events: list[str], started: list[str]):
    """Ready at once; a message "crash" makes it raise Boom, "return" return, "interrupt"
    raise KeyboardInterrupt."""

    async def run(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        started.append(f"{ctx.name}{ctx.incarnation}")
        task_status.started()
        async for message in ctx.mailbox:
            if message == "interrupt":
                events.append("other")
                raise KeyboardInterrupt
            events.append("crash")
            if message == "return":
                return
            raise Boom(f"{ctx.name} lost the shared resource")

    return run


async def _run(strategy: str, how: str, ending: str, events: list[str], started: list[str],
               sups: list):
    """a crashes in the tick the other thing (``how``) happens; b runs after it."""
    with trio.CancelScope() as outside:
        async with open_supervisor([ChildSpec(name, _child(events, started)) for name in "ab"],
                                   strategy=strategy,
                                   intensity=Intensity(max_restarts=5, period=60.0)) as sup:
            sups.append(sup)
            go = trio.Event()

            async def other() -> None:
                await go.wait()
                if how == "outside_cancel":
                    events.append("other")
                    outside.cancel()
                elif how == "stop_child":
                    events.append("other")
                    await sup.stop_child("a")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(other)
                await trio.testing.wait_all_tasks_blocked()
                sup.mailbox("a").send_nowait(ending)  # no checkpoint between: one tick
                if how == "sibling_interrupt":
                    sup.mailbox("b").send_nowait("interrupt")
                go.set()
                await trio.sleep(1.0)
                outside.cancel()
    return outside


async def _interrupted(*args):
    with pytest.raises(KeyboardInterrupt):
        await _run(*args)


@pytest.mark.parametrize("first", ["crash", "other"])
@pytest.mark.parametrize("ending", ["crash", "return"])
@pytest.mark.parametrize("how", ["outside_cancel", "sibling_interrupt", "stop_child"])
@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_a_crash_in_the_tick_of_its_stop_is_not_restarted(
        autojump_clock, live_tasks, strategy, how, ending, first):
    """Whichever trio ran first in the tick, a's crash is recorded ``shutdown_error`` (a
    return, no error, leaves no record), no restart is counted, no child starts a second
    time, and no task is left."""
    before = live_tasks()
    for _ in range(ROUNDS):
        events: list[str] = []
        started: list[str] = []
        sups: list = []
        if how == "sibling_interrupt":
            await _interrupted(strategy, how, ending, events, started, sups)
        else:
            await _run(strategy, how, ending, events, started, sups)
        if events and events[0] == first:
            break
    else:
        pytest.fail(f"trio never ran {first!r} first in {ROUNDS} runs")
    sup = sups[0]
    assert sorted(events) == ["crash", "other"]
    assert started == ["a1", "b1"]
    assert [(r.child, r.action, r.incarnation) for r in sup.restart_log] == (
        [("a", "shutdown_error", 1)] if ending == "crash" else [])
    stats = sup.statistics()
    assert stats.restarts == 0
    assert [c.name for c in stats.children] == (["b"] if how == "stop_child" else ["a", "b"])
    assert all(child.state == "stopped" for child in stats.children)
    assert live_tasks() == before
