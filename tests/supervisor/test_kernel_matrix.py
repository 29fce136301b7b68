"""The kernel's failure matrix, as the statistics and the restart log report it.

Strategy x restart type x how a child ends, checked against what the README's "Supervising
your own tasks" section promises: who restarts, what ``restarts`` / ``incarnation`` say, and
that the counts agree with the restart intensity.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing

from tidings.supervisor import ChildSpec, Intensity, open_supervisor


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_siblings_failing_together_count_one_restart_in_the_statistics(
        autojump_clock, strategy):
    """One group restart is one restart: in the intensity (which allowed max_restarts=1
    here) and in ``statistics()`` alike. The crashes a group restart already due covers were
    counted in the statistics all the same, one each: four ``restarts`` for one restart,
    and ``restarts`` of 1 for siblings that the README says a group restart leaves at 0."""
    down = trio.Event()

    async def user(ctx, *, task_status=trio.TASK_STATUS_IGNORED):
        task_status.started()
        if ctx.incarnation == 1:
            if ctx.name == "a":  # the first to notice; the others a moment after
                await trio.sleep(1.0)
                down.set()
            else:
                await down.wait()
            raise ConnectionError("the shared database went away")
        await trio.sleep_forever()

    async with open_supervisor([ChildSpec(name, user, shutdown_timeout=0) for name in "abcd"],
                               strategy=strategy,
                               intensity=Intensity(max_restarts=1, period=60.0)) as sup:
        await trio.sleep(2.0)
        stats = sup.statistics()
        assert [(c.name, c.incarnation) for c in stats.children] == [
            (name, 2) for name in "abcd"]
        assert [(c.name, c.restarts) for c in stats.children] == [
            ("a", 1), ("b", 0), ("c", 0), ("d", 0)]
        assert stats.restarts == 1
