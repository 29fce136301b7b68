"""Two children crashing in the same tick as the supervisor gives up: one escalation, in any order.

README ("Escalation"): when a restart would go over the intensity the supervisor records it as
``escalate`` and ``open_supervisor`` raises ``RestartIntensityExceeded`` naming the child. Two
children that crash in one tick (a resource they share went away) are run by trio in a random
order. The first one run escalated and was named, and the other's crash, though nothing was
stopping it, was recorded ``shutdown_error``: which child the error named, and which crash
the log called an error while stopping, fell to trio's shuffle. Both crashes would have gone
over the intensity: both are ``escalate``, and the error names the earlier in start order.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from tidings.errors import RestartIntensityExceeded
from tidings.supervisor import ChildSpec, Intensity, open_supervisor

from .conftest import Boom

ROUNDS = 64
"""Runs to find the wanted run order (trio picks one of two at random: 2**-64 to miss it)."""


def _crasher(crashed: list[str]):
    """Ready at once; raises on its first message, writing down that it ran its crash."""

    async def run(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for _ in ctx.mailbox:
            crashed.append(ctx.name)
            raise Boom(f"{ctx.name} lost the shared resource")

    return run


@pytest.mark.parametrize("run_order", ["ac", "ca"])
@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
@pytest.mark.parametrize("used", [0, 1])
async def test_same_tick_crashes_at_the_limit_name_the_earliest_child(
        autojump_clock, caplog, strategy, run_order, used):
    """a and c crash in one tick with no restart left (``max_restarts=used``, ``used``
    restarts of b taken already). Whichever trio ran first, the error names a (the earlier in
    start order) with a's crash as its cause, the log says a, and both crashes are recorded
    ``escalate``: c's is no error while stopping, nothing was stopping it. (A tick's crashes
    are decided together at its end, so they are recorded in start order.)"""
    caplog.set_level(logging.INFO, logger="tidings.supervisor")
    crashed: list[str] = []
    sups = []

    async def run() -> None:
        async with open_supervisor(
                [ChildSpec(name, _crasher(crashed)) for name in "abc"], strategy=strategy,
                intensity=Intensity(max_restarts=used, period=60.0)) as sup:
            sups.append(sup)
            for _ in range(used):
                sup.mailbox("b").send_nowait("crash")
                while sup.statistics().restarts < 1 or any(
                        c.state != "running" for c in sup.statistics().children):
                    await trio.testing.wait_all_tasks_blocked()
            crashed.clear()
            sup.mailbox("a").send_nowait("crash")  # no checkpoint between: one tick
            sup.mailbox("c").send_nowait("crash")
            await trio.sleep_forever()

    for _ in range(ROUNDS):
        caplog.clear()
        with pytest.raises(RestartIntensityExceeded) as caught:
            await run()
        if "".join(crashed) == run_order:
            break
    else:
        pytest.fail(f"trio never ran the crashes in the order {run_order} in {ROUNDS} runs")
    error = caught.value
    assert error.child == "a"
    assert str(error.__cause__) == "a lost the shared resource"
    assert [(r.child, r.action) for r in sups[-1].restart_log[used:]] == [
        (name, "escalate") for name in "ac"]  # (decided at the tick's end, in start order)
    given_up = [r.getMessage() for r in caplog.records
                if "event=restart_intensity_exceeded" in r.getMessage()]
    assert len(given_up) == 1
    assert "child=a " in given_up[0] + " "


async def test_a_crash_a_tick_later_is_one_while_stopping(autojump_clock):
    """Only the same tick is taken in: c escalates, and a, which c's crash told to crash (so
    a runs it in the next tick, the supervisor stopping already), is an error while stopping
    and not named, though it is earlier in start order. Run 20 times: it never varies."""

    async def relaying(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for _ in ctx.mailbox:
            ctx.supervisor.mailbox("a").send_nowait("crash")
            raise Boom("c lost the shared resource")

    sups = []

    async def run() -> None:
        async with open_supervisor(
                [ChildSpec("a", _crasher([])), ChildSpec("b", _crasher([])),
                 ChildSpec("c", relaying)], intensity=Intensity(max_restarts=0)) as sup:
            sups.append(sup)
            sup.mailbox("c").send_nowait("crash")
            await trio.sleep_forever()

    for round_ in range(20):
        with pytest.raises(RestartIntensityExceeded) as caught:
            await run()
        assert caught.value.child == "c", round_
        assert [(r.child, r.action) for r in sups[-1].restart_log] == [
            ("c", "escalate"), ("a", "shutdown_error")], round_
