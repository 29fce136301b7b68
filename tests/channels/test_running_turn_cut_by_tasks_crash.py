"""A turn that is running when the runtime's ``tasks`` supervisor crashes (its parent restarts
it; the server runs on) is cut, and its user is told at once, as the turns waiting behind it
are (test_unanswered_notice_says_why.py). Before, it ended ``cancelled(shutdown)`` though
nothing stopped, and its message stayed held: nothing was said until the next start of the
process (weeks, for a long-running ``tidings serve``), which then said "because the server
stopped". Now it ends ``failed`` (the task running it failed), and its "not answered" notice,
with the waiting turns' wording, releases its message in the same commit: the next start has
nothing more to say. A turn whose reply committed before the crash is told nothing."""

from __future__ import annotations

import trio

import tidings
from tidings.channels import ChannelConfig
from tidings.supervisor import FaultPlan, FaultRule, Seam
from tidings.supervisor._testing_invariants import lifecycle_violations

from ..log_hook import calling_on
from ..real_time import fail_after_real
from .conftest import GatedAgent, RecordingChannel, rows

FAILED = "because the server's task running the turns failed before"


def _crash_plan() -> FaultPlan:
    """A crash of the ``tasks`` supervisor at the next message to it (a plan counts its hits:
    one each)."""
    return FaultPlan([FaultRule(Seam.RECEIVE, child="tasks", times=1)])


def _held(db_path) -> list[tuple[str | None]]:
    return rows(db_path, "SELECT message_id FROM inbound_messages ORDER BY rowid")


def _notices(db_path) -> list[str]:
    return [text for (text,) in rows(
        db_path, "SELECT text FROM outbox WHERE kind = 'notice' ORDER BY seq")]


def _ends(channel: RecordingChannel) -> list[tuple[str | None, str, str | None]]:
    return [(event.message_id, event.type, getattr(event, "reason", None))
            for event in channel.events if event.terminal]


async def _told_after_restart(db_path, workspace) -> int:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        return rt.scanner.statistics().totals.unanswered


async def _crash_tasks(rt) -> None:
    """Crash the runtime's ``tasks`` supervisor (the fault plan's RECEIVE rule) and return
    once its parent has restarted it."""
    restarted = trio.Event()
    with calling_on("event=child_restarted supervisor=tidings child=tasks ", restarted.set):
        rt.supervisor.mailbox("tasks").send_nowait("crash")
        await restarted.wait()


async def test_a_running_turn_cut_by_a_tasks_crash_is_told_at_once(db_path, workspace) -> None:
    agent = GatedAgent()
    with fail_after_real(30):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0,
                                        fault_plan=_crash_plan()) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                       agent=agent)
            assert await channel.say("first", message_id="m1") == "started"
            await agent.wait_turns(1)
            assert await channel.say("second", message_id="m2") == "queued"
            await _crash_tasks(rt)
            await channel.dispatch.wait_idle()  # the notices are durable
            # Told while the server runs on, the running turn first, both with the cause.
            first, second = _notices(db_path)
            await channel.wait_for(lambda: channel.notices() == [first, second])
            assert '"first"' in first
            assert '"second"' in second
            assert FAILED in first, first
            assert FAILED in second, second
            assert _held(db_path) == []  # released with the notices
            # It ends once, and says what happened: no stop, a failure of its task.
            [(message_id, end, reason)] = _ends(channel)
            assert (message_id, end, reason) == ("m1", "failed", None)
            [error] = [event.error for event in channel.events if event.type == "failed"]
            assert "the server's task running the turns failed" in error, error
            assert lifecycle_violations(channel.events) == []
            # The restarted supervisor runs turns again, answered as usual.
            assert await channel.say("third", message_id="m3") == "started"
            await agent.wait_turns(2)
            agent.release()
            await channel.wait_for(lambda: ("m3", "completed", None) in _ends(channel))
    [(status, reason)] = rows(db_path, "SELECT status, reason FROM turns WHERE message_id = 'm1'")
    # no stop: a cancel from outside that nobody chose, which leaves its message held for
    # the notice to release (not "shutdown")
    assert (status, reason) == ("cancelled", "cancelled")
    assert _notices(db_path) == [first, second]
    assert await _told_after_restart(db_path, workspace) == 0  # nothing more to say


async def test_a_turn_whose_reply_committed_before_the_crash_is_told_nothing(
        db_path, workspace) -> None:
    agent = GatedAgent("the answer", block=False)
    with fail_after_real(30):
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0,
                                        fault_plan=_crash_plan()) as rt:
            crashed = trio.Event()

            class CrashOnCompleted(RecordingChannel):
                def on_task_lifecycle(self, event) -> None:  # type: ignore[no-untyped-def]
                    super().on_task_lifecycle(event)
                    if event.type == "completed":  # its reply is durable: then the crash
                        rt.supervisor.mailbox("tasks").send_nowait("crash")
                        crashed.set()

            channel = CrashOnCompleted(rt, ChannelConfig(name="ops"), agent=agent)
            restarted = trio.Event()
            with calling_on("event=child_restarted supervisor=tidings child=tasks ",
                            restarted.set):
                assert await channel.say("question", message_id="m1") == "started"
                await crashed.wait()
                await restarted.wait()
            await channel.dispatch.wait_idle()
            await channel.wait_for(lambda: channel.messages() == ["the answer"])
            assert _ends(channel) == [("m1", "completed", None)]
            assert _held(db_path) == []
    assert _notices(db_path) == []
    assert rows(db_path, "SELECT status FROM turns") == [("completed",)]
    assert await _told_after_restart(db_path, workspace) == 0


async def test_a_host_cancel_around_the_runtime_is_no_crash(tmp_path, workspace) -> None:
    """A cancel around the whole runtime (a host's) reaches the turn's task and the ``tasks``
    supervisor in either order: the turn is stopped, not cut by a crash, whichever trio runs
    first (several runs: one of them ended ``failed`` when the turn went first)."""
    for run in range(8):
        db_path = tmp_path / f"run{run}.db"
        agent = GatedAgent()
        with trio.CancelScope() as around:
            async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
                channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
                assert await channel.say("first", message_id="m1") == "started"
                await agent.wait_turns(1)
                around.cancel()
                await trio.sleep_forever()
        assert _ends(channel) == [("m1", "cancelled", "shutdown")], run
        assert _notices(db_path) == []
        assert _held(db_path) == [("m1",)]  # told at the next start, as at a stop
