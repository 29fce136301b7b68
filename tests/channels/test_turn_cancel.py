"""Why a turn ended cancelled: /cancel, /clear, steer, timeout and shutdown, first reason wins."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import STEER_NOTE, ChannelConfig
from tidings.errors import RuntimeClosedError

from ..real_time import fail_after_real
from .conftest import GatedAgent, RecordingChannel, rows


def cancels(channel: RecordingChannel) -> list[str]:
    return [event.reason for event in channel.events if event.type == "cancelled"]


def terminals(channel: RecordingChannel) -> list[str]:
    return [event.type for event in channel.events if event.terminal]


async def test_cancel_command_cancels_the_turn_and_nothing_completes(rt, db_path) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("long job")
    await agent.wait_turns(1)
    assert await channel.say("/cancel") == "command"
    await channel.wait_events("cancelled")
    await channel.wait_idle()
    assert channel.types() == ["started", "text_chunk", "cancelled"]
    assert cancels(channel) == ["cancel_command"]
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "cancel_command")]
    await channel.wait_for(lambda: channel.notices())
    assert channel.notices() == ["Cancelled the running request."]
    assert channel.messages() == []  # the partial reply is never sent


async def test_a_repeated_cancel_gives_exactly_one_cancelled(rt) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("long job")
    await agent.wait_turns(1)
    await channel.say("/cancel")
    await channel.say("/cancel")
    await channel.wait_idle()
    await channel.say("/cancel")
    await channel.wait_for(lambda: len(channel.notices()) == 3)
    assert cancels(channel) == ["cancel_command"]
    assert terminals(channel) == ["cancelled"]
    assert channel.notices() == ["Cancelled the running request.", "Nothing to cancel.",
                                 "Nothing to cancel."]


async def test_cancel_before_any_message_creates_nothing(rt, db_path) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await channel.say("/cancel")
    [answer] = await channel.wait_outbounds(1)
    assert (answer.session_id, answer.text) == (None, "Nothing to cancel.")
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(0,)]


async def test_clear_cancels_drops_queued_turns_and_forgets_the_session(rt, db_path) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                               agent=agent)
    await channel.say("first")
    await agent.wait_turns(1)
    assert await channel.say("queued") == "queued"
    old = agent.turns[0].session_id
    assert await channel.say("/reset") == "command"
    await channel.wait_idle()
    # The queued turn never ran, but it ended too, as one cancelled before it began.
    assert cancels(channel) == ["clear", "clear"]
    assert terminals(channel) == ["cancelled", "cancelled"]
    assert len(agent.turns) == 1
    assert rows(db_path, "SELECT state FROM sessions WHERE session_id = ?", old) == [("closed",)]
    await channel.say("again")
    await agent.wait_turns(2)
    assert agent.turns[1].session_id != old
    agent.release()
    await channel.wait_idle()


async def test_steer_cancels_the_active_turn_then_runs_the_new_one_with_a_note(rt) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("first", message_id="m1")
    await agent.wait_turns(1)
    assert await channel.say("actually, this", message_id="m2") == "queued"
    await agent.wait_turns(2)
    assert cancels(channel) == ["steer"]
    assert [(e.type, e.message_id) for e in channel.events if e.type != "text_chunk"] == [
        ("started", "m1"), ("cancelled", "m1"), ("started", "m2")]
    assert agent.turns[1].prompt == f"{STEER_NOTE}\n\nactually, this"
    assert agent.turns[0].prompt == "first"
    agent.release()
    await channel.wait_events("completed")
    assert agent.max_running == 1


async def test_steer_never_runs_two_turns_of_a_session_at_once(rt) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("m0")
    await agent.wait_turns(1)
    # Each message is accepted once it is held (a write): whether the next one joins the
    # waiting turn or steers the one that just began depends on how far the session got.
    outcomes = [await channel.say(f"m{i}") for i in range(1, 6)]
    assert outcomes[0] == "queued"
    assert set(outcomes) <= {"queued", "merged"}
    await channel.wait_for(lambda: agent.turns[-1].text.endswith("m5"))
    agent.release()
    await channel.wait_idle()
    assert agent.max_running == 1
    assert terminals(channel)[-1] == "completed"
    assert set(terminals(channel)[:-1]) == {"cancelled"}  # every earlier turn was steered away


async def test_a_turn_past_its_deadline_is_cancelled_with_timeout(db_path, workspace,
                                                                  autojump_clock) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops", turn_timeout=30), agent=agent)
        await channel.say("slow")
        await agent.wait_turns(1)
        started = trio.current_time()
        await channel.wait_events("cancelled")
        assert agent.cancelled_at[0] - started == pytest.approx(30)
    assert cancels(channel) == ["timeout"]
    assert terminals(channel) == ["cancelled"]
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "timeout")]


async def test_a_deadline_that_fired_first_wins_over_a_later_cancel(db_path, workspace,
                                                                   mock_clock) -> None:
    with fail_after_real(60):  # hang guard: mock_clock moves only at jump()
        agent = GatedAgent()
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops", turn_timeout=10), agent=agent)
            await channel.say("slow")
            await agent.wait_turns(1)
            await trio.testing.wait_all_tasks_blocked()
            mock_clock.jump(11)  # the deadline passed; the turn has not noticed yet
            assert await channel.say("/cancel") == "command"
            await channel.wait_events("cancelled")
        assert cancels(channel) == ["timeout"]
        assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "timeout")]


async def test_shutdown_cancels_a_running_turn_with_reason_shutdown(db_path,
                                                                   workspace) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
        await channel.say("still thinking")
        await agent.wait_turns(1)
    assert cancels(channel) == ["shutdown"]
    assert channel.types() == ["started", "text_chunk", "cancelled"]
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "shutdown")]
    with pytest.raises(RuntimeClosedError):
        await channel.say("too late")


async def test_a_turn_that_finishes_within_the_grace_completes(db_path, workspace,
                                                             autojump_clock) -> None:
    class Slow:
        async def run(self, turn) -> None:
            await turn.send_chunk("done")
            await trio.sleep(1)

    async with tidings.open_runtime(db_path, workspace=workspace, grace=5) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=Slow())
        await channel.say("finish please")
        await channel.wait_events("text_chunk")
    assert terminals(channel) == ["completed"]
    [(_, status)] = rows(db_path, "SELECT kind, status FROM outbox")
    assert status in ("queued", "sent")  # the reply is durable either way


async def test_a_cancelled_agent_inside_its_own_nursery_is_still_cancelled(rt, db_path) -> None:
    class Nursery:
        async def run(self, turn) -> None:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(trio.sleep_forever)
                await turn.send_chunk("waiting")
                await trio.sleep_forever()

    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=Nursery())
    await channel.say("go")
    await channel.wait_events("text_chunk")
    await channel.say("/cancel")
    await channel.wait_events("cancelled")
    await channel.wait_idle()
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "cancel_command")]


class Unprintable(RuntimeError):
    """An error that cannot be shown: its ``str()`` and ``repr()`` raise (a library
    exception whose methods read attributes it never set)."""

    def __str__(self) -> str:
        raise AttributeError("message")

    def __repr__(self) -> str:
        raise AttributeError("message")


@pytest.mark.parametrize("error", [RuntimeError("interrupted"), Unprintable()],
                         ids=["plain", "unprintable"])
async def test_an_agent_that_fails_while_being_cancelled_is_cancelled(rt, db_path,
                                                                      error) -> None:
    """What a careless agent does: its Cancelled turned into an error. The turn is cancelled,
    in the turns table too. Unprintable: the log line about the error read its repr(), which
    raised in the turn's own handler, and the table said ``failed`` while the lifecycle said
    ``cancelled``."""
    class Wrapping:
        async def run(self, turn) -> None:
            await turn.send_chunk("waiting")
            try:
                await trio.sleep_forever()
            except trio.Cancelled:
                raise error from None

    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=Wrapping())
    await channel.say("go")
    await channel.wait_events("text_chunk")
    await channel.say("/cancel")
    await channel.wait_idle()
    assert terminals(channel) == ["cancelled"]
    assert cancels(channel) == ["cancel_command"]
    # the turns table agrees with the lifecycle: not ``failed``
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "cancel_command")]


async def test_cancel_reaches_a_turn_left_running_in_the_previous_session(rt) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("long job")
    await agent.wait_turns(1)
    await channel.say("/new")
    await channel.say("/cancel")
    await channel.wait_idle()
    assert cancels(channel) == ["cancel_command"]
