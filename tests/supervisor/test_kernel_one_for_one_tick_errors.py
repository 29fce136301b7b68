"""one_for_one: an error while deciding one crash of a tick leaves none of the others undecided.

The ``one_for_one`` crashes of one tick are decided together at its end, in start order. A
decision logs (``child_restarted``, ``child_failed``), and the host's logging can raise (a
filter that breaks). Such an error in the middle of a tick went out of the deciding task
with the tick taken off the list: the tick's later crashes were never decided, so never
recorded nor restarted (their children ended silently, ``exited``), and, had it given up in
that tick, the supervisor never marked the tick over. Now every crash of the tick is decided
and recorded, then the error fails the supervisor loudly (it comes out of
``open_supervisor``); errors from several decisions come out together.
"""

from __future__ import annotations

import logging

import pytest
import trio

from tidings.errors import SupervisorError
from tidings.supervisor import ChildSpec, Intensity, open_supervisor

from .conftest import Boom


class FilterBroke(Exception):
    """What the host's broken logging filter raises."""


class _BreakOn(logging.Filter):
    """A logging filter that raises on the lines holding every one of ``words``."""

    def __init__(self, *words: str) -> None:
        super().__init__()
        self.words = words

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if all(word in message for word in self.words):
            raise FilterBroke(f"the filter broke on {message}")
        return True


def _crasher(ctx_names: list[str]):
    async def run(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        async for _ in ctx.mailbox:
            ctx_names.append(ctx.name)
            raise Boom(f"{ctx.name} lost the shared resource")

    return run


async def _crash_a_and_c(max_restarts: int, sups: list, strategy: str = "one_for_one") -> None:
    crashed: list[str] = []
    async with open_supervisor([ChildSpec(name, _crasher(crashed)) for name in "abc"],
                               strategy=strategy,
                               intensity=Intensity(max_restarts=max_restarts,
                                                   period=60.0)) as sup:
        sups.append(sup)
        sup.mailbox("a").send_nowait("crash")  # no checkpoint between: one tick
        sup.mailbox("c").send_nowait("crash")
        await trio.sleep_forever()


@pytest.fixture
def broken_filter(caplog):
    """Install a breaking filter on the kernel's logger (INFO on), and take it off after."""
    caplog.set_level(logging.INFO, logger="tidings.supervisor")
    logger = logging.getLogger("tidings.supervisor")
    installed: list[logging.Filter] = []

    def install(*words: str) -> None:
        installed.append(_BreakOn(*words))
        logger.addFilter(installed[-1])

    yield install
    for each in installed:
        logger.removeFilter(each)


@pytest.mark.parametrize(("max_restarts", "event", "action"), [
    (5, "event=child_restarted", "restart"), (0, "event=child_failed", "escalate")])
@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_an_error_deciding_one_crash_leaves_the_next_decided(
        autojump_clock, live_tasks, broken_filter, strategy, max_restarts, event, action):
    """a and c crash in one tick; logging a's decision raises. c's crash is still decided and
    recorded (``restart``, or ``escalate`` with no restart left), then the error comes out of
    ``open_supervisor``; every child is stopped and no task is left. (Every strategy decides
    a tick's crashes at its end.)"""
    before = live_tasks()
    broken_filter(event, "child=a ")
    sups: list = []
    with pytest.raises(FilterBroke):
        await _crash_a_and_c(max_restarts, sups, strategy)
    sup = sups[0]
    assert [(r.child, r.action) for r in sup.restart_log] == [("a", action), ("c", action)]
    stats = sup.statistics()
    assert stats.state == "failed"
    assert all(child.state == "stopped" for child in stats.children)
    assert live_tasks() == before


async def test_errors_deciding_two_crashes_come_out_together(
        autojump_clock, live_tasks, broken_filter):
    """Logging both decisions of the tick raises: both crashes are recorded, and
    ``open_supervisor`` raises one SupervisorError whose cause holds both errors."""
    before = live_tasks()
    broken_filter("event=child_restarted", "child=a ")
    broken_filter("event=child_restarted", "child=c ")
    sups: list = []
    with pytest.raises(SupervisorError) as caught:
        await _crash_a_and_c(5, sups)
    group = caught.value.__cause__
    assert isinstance(group, BaseExceptionGroup)
    broke = group.split(FilterBroke)[0]
    assert broke is not None
    texts = sorted(str(leaf) for leaf in _leaves(broke))
    assert len(texts) == 2
    assert "child=a " in texts[0]
    assert "child=c " in texts[1]
    assert [(r.child, r.action) for r in sups[0].restart_log] == [
        ("a", "restart"), ("c", "restart")]
    assert live_tasks() == before


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    found: list[BaseException] = []
    for each in group.exceptions:
        found.extend(_leaves(each) if isinstance(each, BaseExceptionGroup) else [each])
    return found
