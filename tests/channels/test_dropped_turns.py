"""Messages accepted but never run: turns still waiting when their session's worker ends.

A message that was accepted (``queued`` behind a running turn, or ``merged`` into a waiting
one) and then dropped because the runtime stopped (or the worker's task was abandoned) must
not vanish: the user is told in the session, through the outbox, quoting the message, so the
notice survives a restart and reaches the platform once a route is there. ``/clear`` also
drops waiting turns, but that is the user's own request: nothing is said about them.
Interleavings are forced with events and the mock clock, never with sleeps.
"""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import ChannelConfig, Inbound
from tidings.channels._dispatch import PendingTurn, SessionState
from tidings.supervisor import FaultPlan, FaultRule, Seam
from tidings.testing import MemoryRoute

from .conftest import GatedAgent, Lingering, RecordingChannel, rows

NOT_ANSWERED = "was not answered"


def notices_in_outbox(db_path) -> list[tuple[str, str]]:
    """``(text, status)`` of the notice rows about unanswered messages, in seq order."""
    return [(text, status) for text, status in rows(
        db_path, "SELECT text, status FROM outbox WHERE kind = 'notice' ORDER BY seq")
        if NOT_ANSWERED in text]


async def test_a_queued_message_dropped_at_exit_is_told_durably_and_delivered_after_restart(
        db_path, workspace, caplog) -> None:
    caplog.set_level(logging.WARNING, logger="tidings.channels")
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                   agent=agent)
        assert await channel.say("first") == "started"
        await agent.wait_turns(1)
        [session_id] = channel.directory.sessions()
        # The platform stops answering: a command answer hangs in its deliver(), so what the
        # session sends next stays queued in the outbox past the exit.
        channel.platform.stall()
        await channel.say("/status")
        await channel.platform.wait_attempted(1)
        assert await channel.say("second\nmessage, please") == "queued"
    assert [event.reason for event in channel.events if event.type == "cancelled"] == [
        "shutdown"]
    assert len(agent.turns) == 1  # the second message never ran
    [(text, status)] = notices_in_outbox(db_path)
    assert status == "queued"
    assert '"second message, please"' in text  # quoted on one line
    assert "send it again" in text
    assert any("event=turns_dropped" in r.getMessage() and "count=1" in r.getMessage()
               for r in caplog.records)
    # Nothing pretends the model saw it: no user row for the dropped message.
    users = rows(db_path, "SELECT text FROM messages WHERE role = 'user' ORDER BY history_id")
    assert users == [("first",)]

    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        report = await rt.recover()
        with trio.fail_after(10):
            [delivered, cut] = await route.wait_delivered(2)
    assert delivered.kind == "notice"
    assert delivered.text == text
    # The running turn the stop cut ("first") stayed held: recovery tells it, once.
    assert report.unanswered == 1
    assert cut.kind == "notice"
    assert '"first"' in cut.text
    assert "send it again" in cut.text
    assert cut.metadata["unanswered"] is True
    assert notices_in_outbox(db_path) == [(text, "sent"), (cut.text, "sent")]


@pytest.mark.parametrize("mode", ["collect", "steer"])
async def test_merged_messages_dropped_at_exit_get_one_notice_per_turn(
        db_path, workspace, mode, autojump_clock) -> None:
    agent = Lingering()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode=mode),
                                   agent=agent)
        assert await channel.say("first") == "started"
        await agent.entered.wait()
        assert await channel.say("also this") == "queued"
        assert await channel.say("and that") == "merged"
    assert agent.texts == ["first"]
    [(text, _status)] = notices_in_outbox(db_path)  # one notice for the merged turn
    assert '"also this and that"' in text


async def test_each_dropped_turn_gets_its_own_notice_and_a_long_message_is_cut(
        db_path, workspace) -> None:
    agent = GatedAgent()
    long = "x" * 500
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                   agent=agent)
        await channel.say("first")
        await agent.wait_turns(1)
        assert await channel.say("second \u202eevil") == "queued"
        assert await channel.say(long) == "queued"
    texts = [text for text, _status in notices_in_outbox(db_path)]
    assert len(texts) == 2
    assert '"second evil"' in texts[0]  # the bidi override is gone
    assert long not in texts[1]
    assert len(texts[1]) < 300


async def test_a_turn_whose_task_was_abandoned_is_told_too(db_path, workspace) -> None:
    plan = FaultPlan([FaultRule(Seam.CHILD_START, child="task:*", times=1)])
    agent = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
        assert await channel.say("never run") == "started"
        with trio.fail_after(10):
            await channel.wait_for(lambda: any(NOT_ANSWERED in n for n in channel.notices()))
        assert agent.turns == []
        [notice] = [n for n in channel.notices() if NOT_ANSWERED in n]
        assert '"never run"' in notice
        assert await channel.say("again") == "started"  # the session goes on
        await channel.wait_idle()
        assert [t.text for t in agent.turns] == ["again"]


async def test_clear_drops_queued_turns_without_a_notice(db_path, workspace) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                   agent=agent)
        await channel.say("first")
        await agent.wait_turns(1)
        assert await channel.say("second") == "queued"
        assert await channel.say("/clear") == "command"
        await channel.wait_idle()
        await channel.wait_for(lambda: channel.notices())
        assert channel.notices() == ["Cleared. Your next message starts a new session."]
    # The running turn and the dropped one (which ends, never having run) both say why.
    assert [event.reason for event in channel.events if event.type == "cancelled"] == [
        "clear", "clear"]
    assert len(agent.turns) == 1
    assert notices_in_outbox(db_path) == []


async def test_a_drop_the_closed_runtime_cannot_tell_is_logged_and_raises_nothing(
        db_path, workspace, caplog) -> None:
    # Reached only when a worker's cleanup outlives the runtime (e.g. the whole tree is being
    # torn down after an escalation): called directly, as no ordinary stop gets there.
    caplog.set_level(logging.WARNING, logger="tidings.channels")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"))
        await channel.say("/new")
        [session_id] = channel.directory.sessions()
    state = SessionState(session_id, channel.conversation_for(
        Inbound(chat_id="c1", sender_id="u1", text="lost?")))
    state.pending.append(PendingTurn([Inbound(chat_id="c1", sender_id="u1", text="lost?",
                                              message_id="m9")]))
    dropped = channel.dispatch._worker_ended(state)
    await channel.dispatch._tell_unanswered(state, dropped, "stop")
    # Dealt with: the channel does not wait for it. Nothing of the runtime is left to run, so
    # once every task is blocked, wait_idle() has returned or waits for what never comes.
    returned = trio.Event()

    async def wait_idle() -> None:
        await channel.wait_idle()
        returned.set()

    with trio.fail_after(30):  # hang guard only
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wait_idle)
            await trio.testing.wait_all_tasks_blocked()
            assert returned.is_set(), "wait_idle() waits for a turn dropped and logged"
    [record] = [r for r in caplog.records if "event=turns_dropped" in r.getMessage()]
    assert "notices=0" in record.getMessage()
    assert "the runtime is closed" in record.getMessage()
    assert notices_in_outbox(db_path) == []


async def test_a_waiting_turn_is_not_started_at_exit_though_the_grace_has_time_left(
        db_path, workspace, autojump_clock) -> None:
    """The grace is for the turns running when the stop begins: the one running completes
    within it, and the message queued behind it is not started but told about (README:
    SIGTERM, Lifecycle)."""
    stop_began = trio.Event()

    class UntilTheStop:
        def __init__(self) -> None:
            self.texts: list[str] = []
            self.entered = trio.Event()

        async def run(self, turn) -> None:
            self.texts.append(turn.text)
            self.entered.set()
            await stop_began.wait()
            await turn.send_chunk("done")

    agent = UntilTheStop()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=60) as rt:
        stop = rt.tasks.stop

        async def stop_and_tell() -> None:
            stop_began.set()  # the agent runs on once stop() has begun (it takes no turn)
            await stop()

        rt.tasks.stop = stop_and_tell  # type: ignore[method-assign]
        channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                                   agent=agent)
        await channel.say("first")
        await agent.entered.wait()
        assert await channel.say("second") == "queued"
        began = trio.current_time()
    assert trio.current_time() - began < 60  # the running turn ended within the grace
    assert agent.texts == ["first"]
    assert [event.type for event in channel.events if event.terminal] == ["completed"]
    [(text, _status)] = notices_in_outbox(db_path)
    assert '"second"' in text


async def test_the_drop_log_counts_only_the_notices_it_wrote(db_path, workspace,
                                                             caplog) -> None:
    """Of two turns a worker's end dropped, one the user had cancelled (no word, as /clear)
    and one waiting: one notice is written, and the log says ``notices=1``, not 2."""
    caplog.set_level(logging.WARNING, logger="tidings.channels")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"))
        await channel.say("/new")
        [session_id] = channel.directory.sessions()
        inbound = Inbound(chat_id="c1", sender_id="u1", text="lost?", message_id="m9")
        state = SessionState(session_id, channel.conversation_for(inbound))
        cancelled = PendingTurn([Inbound(chat_id="c1", sender_id="u1", text="stop me")])
        cancelled.cancelled = "cancel_command"
        state.pending.extend([cancelled, PendingTurn([inbound])])
        dropped = channel.dispatch._worker_ended(state)
        await channel.dispatch._tell_unanswered(state, dropped, "stop")
    [record] = [r for r in caplog.records if "event=turns_dropped" in r.getMessage()]
    assert "count=2" in record.getMessage()
    assert "notices=1" in record.getMessage()
    assert len(notices_in_outbox(db_path)) == 1
