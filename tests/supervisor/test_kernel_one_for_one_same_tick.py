"""one_for_one: crashes in one tick are decided together, in start order, whatever trio's order.

README ("Escalation", "Intensity and backoff"): a supervisor restarts at most ``max_restarts``
times within ``period``; the restart that would go over escalates. Two children that crash in
one tick (a resource they share went away) are run by trio in a random order. Under
``one_for_one`` each crash was decided as trio ran it: with one restart left, the first one
trio ran took it and restarted, and the other escalated and was named in the supervisor's
failure, so which child kept running and which one ``RestartIntensityExceeded`` blamed fell
to trio's shuffle. The tick's crashes are now decided together at its end, in start order:
the earlier child restarts, the later one escalates and is named, whichever trio ran first.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.errors import RestartIntensityExceeded
from tidings.supervisor import ChildSpec, Intensity, open_supervisor

from .conftest import Boom

ROUNDS = 64
"""Runs to find the wanted run order (trio picks one of two at random: 2**-64 to miss it)."""


def _crasher(crashed: list[tuple[str, int]]):
    """Ready at once; raises on its first message, writing down that it ran its crash."""

    async def run(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for _ in ctx.mailbox:
            crashed.append((ctx.name, ctx.incarnation))
            raise Boom(f"{ctx.name} lost the shared resource")

    return run


@pytest.mark.parametrize("run_order", ["ac", "ca"])
async def test_one_restart_left_goes_to_the_earliest_child_in_start_order(
        autojump_clock, live_tasks, run_order):
    """a and c crash in one tick with one restart left (``max_restarts=1``). Whichever trio
    ran first, a (the earlier in start order) restarts and c escalates: the error names c,
    with c's crash as its cause; the log says a ``restart``, then c ``escalate``; a's new
    incarnation ran; every child is stopped and no task is left."""
    crashed: list[tuple[str, int]] = []
    sups = []
    before = live_tasks()

    async def run() -> None:
        async with open_supervisor(
                [ChildSpec(name, _crasher(crashed)) for name in "abc"],
                intensity=Intensity(max_restarts=1, period=60.0)) as sup:
            sups.append(sup)
            sup.mailbox("a").send_nowait("crash")  # no checkpoint between: one tick
            sup.mailbox("c").send_nowait("crash")
            await trio.sleep_forever()

    for _ in range(ROUNDS):
        crashed.clear()
        with pytest.raises(RestartIntensityExceeded) as caught:
            await run()
        if "".join(name for name, _ in crashed) == run_order:
            break
    else:
        pytest.fail(f"trio never ran the crashes in the order {run_order} in {ROUNDS} runs")
    sup = sups[-1]
    error = caught.value
    assert error.child == "c"
    assert str(error.__cause__) == "c lost the shared resource"
    assert [(r.child, r.action, r.incarnation) for r in sup.restart_log] == [
        ("a", "restart", 1), ("c", "escalate", 1)]
    stats = sup.statistics()
    assert stats.state == "failed"
    assert stats.restarts == 1
    assert [(c.name, c.state, c.restarts) for c in stats.children] == [
        ("a", "stopped", 1), ("b", "stopped", 0), ("c", "stopped", 0)]
    assert live_tasks() == before


async def test_a_restart_decided_at_the_ticks_end_waits_no_longer(autojump_clock):
    """Deciding a tick's crashes together holds a restart back by no time at all: a child
    crashing on every message restarts at the same trio time, its new incarnation taking the
    next message, and the intensity counts each restart once."""
    crashed: list[tuple[str, int]] = []
    async with open_supervisor([ChildSpec("a", _crasher(crashed))],
                               intensity=Intensity(max_restarts=5, period=60.0)) as sup:
        for _ in range(5):
            await sup.mailbox("a").send("crash")
        await trio.testing.wait_all_tasks_blocked()
        assert trio.current_time() == 0.0
        assert crashed == [("a", n) for n in range(1, 6)]
        assert [(c.name, c.state, c.incarnation, c.restarts)
                for c in sup.statistics().children] == [("a", "running", 6, 5)]
