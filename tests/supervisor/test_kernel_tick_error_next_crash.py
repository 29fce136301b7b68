"""A decision that raises does not take the next tick's crash of the child that decided with it.

The crashes of one tick are decided at its end, by the first child task that runs next and
asks (see test_kernel_one_for_one_tick_errors.py): that may be a child whose own crash comes
in that very next batch, asking for the earlier tick's crashes first. When deciding one of
those raised (the host's logging broke on its line), the error went out of that child's task
before its own crash was looked at: the crash was never recorded, nor was it in the error the
supervisor failed with, so it was lost, while in the other run order (the earlier tick's own
child deciding first) it was recorded ``shutdown_error``. Which one fell to trio's run order.
"""

from __future__ import annotations

import logging

import pytest
import trio

from tidings.supervisor import ChildSpec, Intensity, open_supervisor

from .conftest import Boom

ROUNDS = 64
"""Runs to meet both run orders (trio picks one of two at random: 2**-63 to miss one)."""


class FilterBroke(Exception):
    """What the host's broken logging filter raises."""


class _BreakOnARestart(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "event=child_restarted" in message and "child=a " in message:
            raise FilterBroke(f"the filter broke on {message}")
        return True


@pytest.fixture
def broken_filter(caplog):
    caplog.set_level(logging.INFO, logger="tidings.supervisor")
    logger = logging.getLogger("tidings.supervisor")
    broken = _BreakOnARestart()
    logger.addFilter(broken)
    yield
    logger.removeFilter(broken)


async def _a_then_x(sups: list, strategy: str) -> None:
    """a crashes; as it does, it sends x the message x crashes on, in the next batch: the one
    a's tick is decided in."""

    async def a(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for _ in ctx.mailbox:
            sups[-1].mailbox("x").send_nowait("crash")
            raise Boom("a lost the shared resource")

    async def x(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for _ in ctx.mailbox:
            raise Boom("x lost it too")

    async with open_supervisor([ChildSpec("a", a), ChildSpec("x", x)], strategy=strategy,
                               intensity=Intensity(max_restarts=5, period=60.0)) as sup:
        sups.append(sup)
        sup.mailbox("a").send_nowait("crash")
        await trio.sleep_forever()


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_the_crash_of_a_child_whose_task_decided_a_tick_that_raised_is_recorded(
        autojump_clock, live_tasks, broken_filter, strategy) -> None:
    """In every run, whichever task decided a's tick: a's decision is recorded, the error
    comes out of ``open_supervisor``, and x's crash (in the next tick, with the supervisor
    failing) is recorded ``shutdown_error``, never lost. (Every strategy decides a tick's
    crashes at its end.)"""
    before = live_tasks()
    logs: set[tuple[tuple[str, str], ...]] = set()
    for _ in range(ROUNDS):
        sups: list = []
        with pytest.raises(FilterBroke):
            await _a_then_x(sups, strategy)
        logs.add(tuple((record.child, record.action) for record in sups[0].restart_log))
        assert sups[0].statistics().state == "failed"
    assert logs == {(("a", "restart"), ("x", "shutdown_error"))}
    assert live_tasks() == before
