"""The ends a session's worker gives, in its place in the session's order, the waiting turns
``/clear`` dropped (``started``, then ``cancelled``, see test_clear_ends_waiting_turns.py)
share one grace, as those a stop ends do (test_dropped_turns_stop_bounded.py): a lifecycle
hook that hangs on each of them cannot hold the worker for a grace per turn. Before, every
dropped turn got its own ``started`` grace and its own ``cancelled`` grace, one after another:
N such turns kept the session's worker (and the channel from being idle) N x 10 seconds."""

from __future__ import annotations

import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.supervisor._testing_invariants import lifecycle_violations

from ..real_time import fail_after_real
from .conftest import GatedAgent, RecordingChannel

DROPPED = ("m2", "m3", "m4", "m5", "m6")


class HangsOnDropped(RecordingChannel):
    """Records every event, then hangs (until given up on) on each event of a dropped turn."""

    async def on_task_lifecycle(self, event) -> None:  # type: ignore[no-untyped-def]
        super().on_task_lifecycle(event)
        if event.message_id in DROPPED:
            await trio.sleep_forever()


async def test_the_worker_ends_many_dropped_turns_within_one_grace(
        db_path, workspace, autojump_clock) -> None:
    agent = GatedAgent()
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = HangsOnDropped(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                     agent=agent)
            assert await channel.say("first", message_id="m1") == "started"
            await agent.wait_turns(1)
            for message_id in DROPPED:
                assert await channel.say(message_id, message_id=message_id) == "queued"
            assert await channel.say("/clear", message_id="c1") == "command"
            clear_done = trio.current_time()
            await channel.wait_idle()  # the worker has ended every dropped turn
            took = trio.current_time() - clear_done
            assert not rt.tasks.stopping  # (the worker's own loop ended them, not a stop)
    # Every dropped turn still ends, in order, with its reason ...
    assert [(event.message_id, event.type, getattr(event, "reason", None))
            for event in channel.events if event.message_id in DROPPED] == [
        (message_id, kind, reason) for message_id in DROPPED
        for kind, reason in (("started", None), ("cancelled", "clear"))]
    assert lifecycle_violations(channel.events) == []
    # ... within one turn's grace for them all (started 5 s + cancelled 5 s): not 5 x 10 s.
    assert took <= 10 + 1, took
