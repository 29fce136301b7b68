"""one_for_one: a crash in the tick a cancellation from outside comes in is no crash to restart.

README ("Children", "Escalation"): a child that fails as a cancellation from outside the block
unwinds it is no crash: it is recorded ``shutdown_error`` and never restarted; a
``KeyboardInterrupt`` ends the supervisor at once; a crash in the tick the body's graceful
stop began is one while stopping. A ``one_for_one`` crash that would restart waits for its
tick's end to be decided with the tick's other crashes. When the cancellation from outside
(or a sibling's ``KeyboardInterrupt``) came later in that same tick, the decision at the
tick's end still restarted the child: the log said ``restart``, the restart was counted and a
new incarnation began under the cancellation; when it came earlier in the tick, the crash
was ``shutdown_error``. Which one fell to trio's run order. Both orders are tested here: the
outside cancellation always wins, and the crash is recorded, never restarted.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.supervisor import ChildSpec, Intensity, open_supervisor

from .conftest import Boom, crash_a_in_the_tick_of_an_outside_cancel

ROUNDS = 64
"""Runs to find the wanted run order (trio picks one of two at random: 2**-64 to miss it)."""


def _crasher(events: list[str], started: list[int]):
    """a: ready at once; raises on its first message, writing down that it ran its crash."""

    async def run(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        started.append(ctx.incarnation)
        task_status.started()
        async for _ in ctx.mailbox:
            events.append("crash")
            raise Boom("a lost the shared resource")

    return run


def _interrupter(events: list[str]):
    """b: ready at once; raises KeyboardInterrupt on its first message."""

    async def run(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for _ in ctx.mailbox:
            events.append("other")
            raise KeyboardInterrupt

    return run


async def _outside_cancel(events: list[str], started: list[int]):
    """a crashes in the tick a task beside it cancels a scope around the supervisor."""
    return await crash_a_in_the_tick_of_an_outside_cancel(
        [ChildSpec("a", _crasher(events, started))],
        cancelling=lambda: events.append("other"))


async def _sibling_interrupt(events: list[str], started: list[int]):
    """a crashes in the tick its sibling b raises KeyboardInterrupt."""
    sups = []

    async def run() -> None:
        async with open_supervisor([ChildSpec("a", _crasher(events, started)),
                                    ChildSpec("b", _interrupter(events))],
                                   intensity=Intensity(max_restarts=5, period=60.0)) as sup:
            sups.append(sup)
            sup.mailbox("a").send_nowait("crash")  # no checkpoint between: one tick
            sup.mailbox("b").send_nowait("interrupt")
            await trio.sleep_forever()

    with pytest.raises(KeyboardInterrupt):
        await run()
    return sups[0]


async def _body_exit(events: list[str], started: list[int]):
    """a crashes in the tick the body leaves the block (its graceful stop begins)."""
    async with open_supervisor([ChildSpec("a", _crasher(events, started))],
                               intensity=Intensity(max_restarts=5, period=60.0)) as sup:
        sup.mailbox("a").send_nowait("crash")
        await trio.lowlevel.checkpoint()  # runs in the batch a crashes in
        events.append("other")
    return sup


async def _body_interrupt(events: list[str], started: list[int]):
    """a crashes in the tick the body raises KeyboardInterrupt."""
    sups = []

    async def run() -> None:
        async with open_supervisor([ChildSpec("a", _crasher(events, started))],
                                   intensity=Intensity(max_restarts=5, period=60.0)) as sup:
            sups.append(sup)
            sup.mailbox("a").send_nowait("crash")
            await trio.lowlevel.checkpoint()  # runs in the batch a crashes in
            events.append("other")
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await run()
    return sups[0]


@pytest.mark.parametrize("first", ["crash", "other"])
@pytest.mark.parametrize("scenario", [_outside_cancel, _sibling_interrupt, _body_interrupt,
                                      _body_exit],
                         ids=["outside_cancel", "sibling_interrupt", "body_interrupt",
                              "body_exit"])
async def test_a_crash_in_the_tick_of_a_stop_from_outside_is_not_restarted(
        autojump_clock, live_tasks, scenario, first):
    """Whichever of the two trio ran first in the tick, a is not restarted: one incarnation
    started, its crash is recorded ``shutdown_error``, nothing is counted, every child ends
    ``stopped`` (the supervisor too; ``failed`` for the KeyboardInterrupt) and no task is
    left."""
    before = live_tasks()
    for _ in range(ROUNDS):
        events: list[str] = []
        started: list[int] = []
        sup = await scenario(events, started)
        if events and events[0] == first:
            break
    else:
        pytest.fail(f"trio never ran {first!r} first in {ROUNDS} runs")
    assert sorted(events) == ["crash", "other"]
    assert started == [1]
    assert [(r.child, r.action, r.incarnation) for r in sup.restart_log] == [
        ("a", "shutdown_error", 1)]
    stats = sup.statistics()
    assert stats.restarts == 0
    interrupted = scenario in (_sibling_interrupt, _body_interrupt)
    assert stats.state == ("failed" if interrupted else "stopped")
    assert all(child.state == "stopped" for child in stats.children)
    assert live_tasks() == before
