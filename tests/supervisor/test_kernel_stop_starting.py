"""stop_child of a child still starting: the ladder lets it finish its start, within bounds.

README ("Changing children while it runs"): a child stopped before it is ready is not cut
off at once. The ladder closes its mailbox and waits up to its ``shutdown_timeout``, so a
start that completes in time hands the child what was sent to it before the stop; a start
that does not is cancelled when the timeout runs out, as any child that will not stop is.
"""

from __future__ import annotations

import pytest
import trio

from tidings.supervisor import ChildSpec, open_supervisor


@pytest.mark.parametrize("strategy", ["one_for_one", "one_for_all", "rest_for_one"])
@pytest.mark.parametrize("ready_after", [3.0, 1000.0], ids=["ready_in_time", "never_ready"])
async def test_stop_child_of_a_starting_child(journal, autojump_clock, strategy, ready_after):
    async with open_supervisor([ChildSpec("a", journal.worker())], strategy=strategy) as sup:
        sup.start_child_soon(ChildSpec("slow", journal.worker(ready_after=ready_after),
                                       start_timeout=None, shutdown_timeout=5.0))
        sup.mailbox("slow").send_nowait("sent before the stop")
        await journal.wait_for("start", "slow", 1)
        asked = trio.current_time()
        await sup.stop_child("slow")
        took = trio.current_time() - asked
        assert [c.name for c in sup.statistics().children] == ["a"]
    slow = [event[:4] for event in journal.events if event[1] == "slow"]
    if ready_after < 5.0:
        assert took == ready_after
        assert slow == [("start", "slow", 1), ("ready", "slow", 1),
                        ("msg", "slow", 1, "sent before the stop"), ("stop", "slow", 1)]
    else:
        assert took == 5.0
        assert slow == [("start", "slow", 1), ("cancelled", "slow", 1, "shutdown timeout of slow")]
    assert sup.restart_log == ()
