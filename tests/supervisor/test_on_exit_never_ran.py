"""``on_exit`` is called for a child whose function never ran, as the ``ChildSpec`` docstring
promises ("also when its function never ran (a failure at child start, or stopped before it
began)"): it is the child's cleanup hook, and a host that gave it resources to release was
never told the child was done with them."""

from __future__ import annotations

import pytest
import trio

from tidings.errors import ChildStartError
from tidings.supervisor import ChildSpec, open_supervisor


async def _fails_to_start(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
    raise ConnectionError("the database is not there")


async def _idle(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
    task_status.started()
    await trio.sleep_forever()


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
async def test_the_children_after_one_that_failed_to_start_have_on_exit_called(
        autojump_clock, strategy):
    exited: list[str] = []
    specs = [ChildSpec("a", _idle, on_exit=lambda: exited.append("a")),
             ChildSpec("b", _fails_to_start, on_exit=lambda: exited.append("b")),
             ChildSpec("c", _idle, on_exit=lambda: exited.append("c")),
             ChildSpec("d", _idle, on_exit=lambda: exited.append("d"))]
    with pytest.raises(ChildStartError):
        async with open_supervisor(specs, strategy=strategy):
            pass
    assert sorted(exited) == ["a", "b", "c", "d"]  # each once: c and d never ran


async def test_a_child_stopped_before_the_initial_start_reached_it_has_on_exit_called(
        autojump_clock):
    exited: list[str] = []

    async def stops_b_as_it_starts(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        await ctx.supervisor.stop_child("b")  # b has not begun: the start has not reached it
        task_status.started()
        await trio.sleep_forever()

    specs = [ChildSpec("a", stops_b_as_it_starts, on_exit=lambda: exited.append("a")),
             ChildSpec("b", _idle, on_exit=lambda: exited.append("b"))]
    async with open_supervisor(specs) as sup:
        assert [c.name for c in sup.statistics().children] == ["a"]
        assert exited == ["b"]
    assert sorted(exited) == ["a", "b"]
