"""A child added with ``start_child_soon`` during a group restart, and stopped before its task
first ran, is stopped at once.

README ("Children"): such a child waits for the restart to be over before it starts, and its
stop ends that wait at once. The ladder ends the waits it finds; but a stop that came before
the child's task had run found none, and the task then waited for the restart all the same:
``stop_child`` returned only once the restart was over (or after the child's
``shutdown_timeout``, killing it; with ``None``, as long as the restart took).
"""

from __future__ import annotations

import pytest
import trio

from tidings.supervisor import ChildSpec, open_supervisor

from .moment_children import child


@pytest.mark.parametrize("strategy", ["one_for_all", "rest_for_one"])
async def test_a_child_added_soon_and_stopped_at_once_does_not_wait_for_the_restart(
        journal, autojump_clock, strategy):
    exits: list[str] = []
    specs = [ChildSpec("a", child(journal)),
             ChildSpec("b", child(journal, ready_after={2: 5.0}))]
    async with open_supervisor(specs, strategy=strategy) as sup:
        await sup.mailbox("a").send("raise")
        await journal.wait_for("start", "b", 2)  # the restart holds on for 5 s
        sup.start_child_soon(ChildSpec("d", child(journal), shutdown_timeout=100.0,
                                       on_exit=lambda: exits.append("d")))
        asked = trio.current_time()
        await sup.stop_child("d")
        assert trio.current_time() - asked == 0.0
        assert [c.name for c in sup.statistics().children] == ["a", "b"]
    assert ("d", 1) not in [event[1:3] for event in journal.of("start")]
    assert exits == ["d"]
