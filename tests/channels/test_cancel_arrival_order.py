"""``/cancel`` cancels what runs when it is received, never the turn of a later message.

With ``dedupe_message_ids``, ``/cancel`` read its id's record, and after a restart looked its
session up, before it took the conversation's lock to record its id and cancel: a message the
platform sent after it, handled during those reads, started a turn that the ``/cancel`` then
cancelled (the user's new question killed by the cancel they sent before it). Each test holds
the ``/cancel`` at one of those reads while the later message is handled as far as it can go.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import ChannelConfig
from tidings.testing import writer_gate

from ..until import until
from .conftest import GatedAgent, RecordingChannel

ANSWERS = ("Nothing to cancel.", "Cancelled the running request.")


def gate_first(target: Any, attribute: str, monkeypatch: pytest.MonkeyPatch,
               *, when: Callable[..., bool] = lambda *args: True
               ) -> tuple[trio.Event, trio.Event]:
    """Hold the first call of ``target.attribute`` that *when* accepts until the returned
    ``go`` is set; ``reached`` is set as it starts waiting."""
    reached, go = trio.Event(), trio.Event()
    real: Callable[..., Awaitable[Any]] = getattr(target, attribute)
    held = False

    async def gated(*args: Any, **kwargs: Any) -> Any:
        nonlocal held
        if not held and when(*args):
            held = True
            reached.set()
            await go.wait()
        return await real(*args, **kwargs)

    monkeypatch.setattr(target, attribute, gated)
    return reached, go


def after_read_of(rt: Any, message_id: str, monkeypatch: pytest.MonkeyPatch) -> trio.Event:
    """An event set once the read of *message_id*'s record has returned."""
    done = trio.Event()
    real = rt.client_message_outcome

    async def read(*args: Any, **kwargs: Any) -> Any:
        outcome = await real(*args, **kwargs)
        if args[2] == message_id:
            done.set()
        return outcome

    monkeypatch.setattr(rt, "client_message_outcome", read)
    return done


async def later_message_meets_held_cancel(rt: Any, channel: RecordingChannel,
                                          reached: trio.Event, go: trio.Event,
                                          hi_handled_up_to_its_turn: Callable[[], Awaitable[Any]]
                                          ) -> dict[str, str]:
    """``/cancel`` (m1), held at a read, then "hi" (m2) handled as far as it goes meanwhile;
    then the read goes on. The outcomes of both."""
    outcomes: dict[str, str] = {}

    async def say(text: str, message_id: str) -> None:
        outcomes[text] = await channel.say(text, message_id=message_id)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(say, "/cancel", "m1")
        await reached.wait()
        nursery.start_soon(say, "hi", "m2")
        await hi_handled_up_to_its_turn()
        await trio.testing.wait_all_tasks_blocked()  # "hi" started its turn, or waits
        go.set()
    return outcomes


async def assert_hi_not_cancelled(channel: RecordingChannel, agent: GatedAgent,
                                  outcomes: dict[str, str], *, turns: int) -> None:
    """"Nothing to cancel." answered, and "hi" reached the agent (its *turns*-th turn), not
    cancelled while it opened nor after."""
    assert outcomes == {"/cancel": "command", "hi": "started"}
    await channel.wait_for(lambda: any(text in ANSWERS for text in channel.notices()))
    assert [text for text in channel.notices() if text in ANSWERS] == ["Nothing to cancel."]
    await agent.wait_turns(turns)
    agent.release()
    await channel.wait_idle()
    assert "cancelled" not in channel.types()
    assert agent.cancelled_at == []


async def test_a_message_handled_while_cancel_reads_its_id_is_not_cancelled(
        rt, monkeypatch) -> None:
    channel = RecordingChannel(rt, ChannelConfig("ops", dedupe_message_ids=True),
                               agent=(agent := GatedAgent(block=False)))
    assert await channel.say("hello", message_id="m0") == "started"
    with trio.fail_after(10):  # real time: the store runs in threads
        await channel.wait_idle()
    agent.block = True
    hi_read = after_read_of(rt, "m2", monkeypatch)
    reached, go = gate_first(rt, "client_message_outcome", monkeypatch,
                             when=lambda *args: args[2] == "m1")
    with trio.fail_after(10):
        outcomes = await later_message_meets_held_cancel(rt, channel, reached, go,
                                                         hi_read.wait)
        await assert_hi_not_cancelled(channel, agent, outcomes, turns=2)


@pytest.mark.parametrize("dedupe", [True, False])
async def test_a_message_handled_while_cancel_looks_its_session_up_is_not_cancelled(
        db_path, workspace, monkeypatch, dedupe) -> None:
    config = ChannelConfig("ops", dedupe_message_ids=dedupe)
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, config, agent=GatedAgent(block=False))
        assert await channel.say("hello", message_id="m0") == "started"
        with trio.fail_after(10):
            await channel.wait_idle()
    # A new process: nothing is cached, so /cancel's session lookup reads the store.
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, config, agent=agent)
        hi_read = after_read_of(rt, "m2", monkeypatch)
        reached, go = gate_first(rt, "conversation_session", monkeypatch)

        async def hi_handled_up_to_its_turn() -> None:
            if dedupe:
                await hi_read.wait()

        with trio.fail_after(10):
            outcomes = await later_message_meets_held_cancel(rt, channel, reached, go,
                                                             hi_handled_up_to_its_turn)
            await assert_hi_not_cancelled(channel, agent, outcomes, turns=1)


async def test_a_cancel_whose_caller_gives_up_while_its_id_is_written_still_cancels(
        rt, monkeypatch) -> None:
    """The platform gave up on the request (its caller is cancelled) while the id's write was
    in flight: the write may commit all the same, and then the cancel must have happened
    too, since the platform's resend is a duplicate that cancels nothing."""
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig("ops", dedupe_message_ids=True), agent=agent)
    assert await channel.say("hello", message_id="m0") == "started"
    cancel_read = after_read_of(rt, "m1", monkeypatch)
    with trio.fail_after(10):  # real time: the store runs in threads
        await agent.wait_turns(1)
        writer = rt.supervisor.mailbox("writer")
        async with trio.open_nursery() as nursery, writer_gate(rt.store) as gate:
            caller = trio.CancelScope()

            async def say_cancel() -> None:
                with caller:
                    await channel.say("/cancel", message_id="m1")

            before = writer.depth
            nursery.start_soon(say_cancel)
            await cancel_read.wait()
            # Its id's write waits at the gate. ("All tasks blocked" also holds while it is
            # in a worker thread after the read: cancelled there, it wrote nothing.)
            await until(lambda: writer.depth > before)
            caller.cancel()
            await trio.testing.wait_all_tasks_blocked()
            gate.release()
        async with writer_gate(rt.store):  # the writes queued before it are durable
            pass
        assert await rt.client_message_outcome("ops", "ops:chat:c1", "m1") == "command"
        assert await channel.say("/cancel", message_id="m1") == "duplicate"  # the resend
        agent.release()  # a turn the cancel missed ends now, answered
        await channel.wait_idle()
    assert len(agent.cancelled_at) == 1
    assert "cancelled" in channel.types()


@pytest.mark.parametrize("command", ["/clear", "/new"])
async def test_a_message_handled_while_a_switch_reads_its_id_goes_to_the_new_session(
        rt, monkeypatch, command) -> None:
    """The same for ``/clear`` and ``/new``: the message sent after one is not started in the
    session it leaves (and, after ``/clear``, cancelled by it), but in the next."""
    channel = RecordingChannel(rt, ChannelConfig("ops", dedupe_message_ids=True),
                               agent=(agent := GatedAgent(block=False)))
    assert await channel.say("hello", message_id="m0") == "started"
    with trio.fail_after(10):  # real time: the store runs in threads
        await channel.wait_idle()
    old = agent.turns[0].session_id
    agent.block = True
    hi_read = after_read_of(rt, "m2", monkeypatch)
    reached, go = gate_first(rt, "client_message_outcome", monkeypatch,
                             when=lambda *args: args[2] == "m1")
    outcomes: dict[str, str] = {}

    async def say(text: str, message_id: str) -> None:
        outcomes[text] = await channel.say(text, message_id=message_id)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(say, command, "m1")
            await reached.wait()
            nursery.start_soon(say, "hi", "m2")
            await hi_read.wait()
            await trio.testing.wait_all_tasks_blocked()  # "hi" started its turn, or waits
            go.set()
        assert outcomes == {command: "command", "hi": "started"}
        await channel.wait_for(lambda: len(agent.turns) == 2 or "cancelled" in channel.types())
        assert "cancelled" not in channel.types()
        agent.release()
        await channel.wait_idle()
    assert agent.turns[1].session_id != old
    assert agent.cancelled_at == []
    assert "cancelled" not in channel.types()
