"""The ends given to the waiting turns ``/clear`` dropped (``started``, then ``cancelled``,
see test_clear_ends_waiting_turns.py and test_dropped_turns_end_at_stop.py) share one grace,
whoever gives them: the session's worker, in their place in the session's order, a stop, or
both (a stop that comes while the worker gives them). A lifecycle hook that hangs on each of
them cannot hold the worker, or the stop, for a grace per turn. Before, every dropped turn got
its own ``started`` grace and its own ``cancelled`` grace, one turn after another: N such
turns kept the session's worker (and the channel from being idle), or held the runtime's stop,
N x 10 seconds; and a stop that came while the worker gave them took a second grace."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.supervisor._testing_invariants import lifecycle_violations

from ..real_time import fail_after_real
from .conftest import GatedAgent, Lingering, RecordingChannel

DROPPED = ("m2", "m3", "m4", "m5", "m6")


class HangsOnDropped(RecordingChannel):
    """Records every event, then hangs (until given up on) on each event of a dropped turn."""

    async def on_task_lifecycle(self, event) -> None:  # type: ignore[no-untyped-def]
        super().on_task_lifecycle(event)
        if event.message_id in DROPPED:
            await trio.sleep_forever()


async def clear_behind_a_running_turn(rt: tidings.Runtime, agent: object,
                                      running: Callable[[], Awaitable[object]],
                                      ) -> HangsOnDropped:
    """A followup channel whose first turn runs (*running* returns once it does), with the
    DROPPED turns queued behind it, then ``/clear``ed."""
    channel = HangsOnDropped(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                             agent=agent)
    assert await channel.say("first", message_id="m1") == "started"
    await running()
    for message_id in DROPPED:
        assert await channel.say(message_id, message_id=message_id) == "queued"
    assert await channel.say("/clear", message_id="c1") == "command"
    return channel


def assert_each_dropped_turn_ended_once(channel: HangsOnDropped, *,
                                        reason: str | None) -> None:
    """Every dropped turn ended, in order: ``started``, then ``cancelled`` (with *reason*, if
    given), and nothing broke the lifecycle's rules."""
    ends = [(event.message_id, event.type, getattr(event, "reason", None) if reason else None)
            for event in channel.events if event.message_id in DROPPED]
    assert ends == [(message_id, kind, cancel_reason) for message_id in DROPPED
                    for kind, cancel_reason in (("started", None), ("cancelled", reason))]
    assert lifecycle_violations(channel.events) == []


async def test_the_worker_ends_many_dropped_turns_within_one_grace(
        db_path, workspace, autojump_clock) -> None:
    agent = GatedAgent()
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = await clear_behind_a_running_turn(rt, agent, lambda: agent.wait_turns(1))
            clear_done = trio.current_time()
            await channel.wait_idle()  # the worker has ended every dropped turn
            took = trio.current_time() - clear_done
            assert not rt.tasks.stopping  # (the worker's own loop ended them, not a stop)
    assert_each_dropped_turn_ended_once(channel, reason="clear")
    # ... within one turn's grace for them all (started 5 s + cancelled 5 s): not 5 x 10 s.
    assert took <= 10 + 1, took


async def test_a_stop_ends_many_dropped_turns_within_one_grace(
        db_path, workspace, autojump_clock) -> None:
    agent = Lingering()  # takes a second to stop: the stop comes while it does
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = await clear_behind_a_running_turn(rt, agent, agent.entered.wait)
            stop_began = trio.current_time()
        stop_took = trio.current_time() - stop_began
    assert_each_dropped_turn_ended_once(channel, reason=None)
    # ... and the stop waits one turn's grace for them all (started 5 s + cancelled 5 s),
    # plus the second the running turn takes to stop: not 5 x 10 s.
    assert stop_took <= 1 + 10 + 1, stop_took


async def test_a_stop_while_the_worker_ends_dropped_turns_takes_no_second_grace(
        db_path, workspace, autojump_clock) -> None:
    """The stop comes while the session's worker is ending the first of the dropped turns in
    its place: those the stop ends are the rest of the same row, within the same grace.
    Before, the worker spent the row's grace on the first, then the stop gave the rest a
    grace of their own: some 20 s where 10 s were due."""
    agent = GatedAgent()
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = await clear_behind_a_running_turn(rt, agent, lambda: agent.wait_turns(1))
            await channel.wait_for(lambda: [(event.message_id, event.type)
                                            for event in channel.events][-1:] == [
                (DROPPED[0], "started")])  # the worker's own loop is ending the first
            row_began = trio.current_time()
            assert not rt.tasks.stopping
        stop_took = trio.current_time() - row_began
    assert_each_dropped_turn_ended_once(channel, reason="clear")
    # ... and the stop waits what is left of the row's one grace (started 5 s + cancelled
    # 5 s) for them all, the worker's and the stop's together: not a second 10 s.
    assert stop_took <= 10 + 1, stop_took
