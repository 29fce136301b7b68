"""``cancel_turn(press_id=...)``: the press id is recorded before the press cancels.

Recorded after the cancel, a crash in between left the turn cancelled and the press id
unknown: the platform's resend of the press (it got no answer) was handled as new and
cancelled the turn of the message the user had sent since. The crash is every write of the
pressing task failing from its cancel on ("the process died here"), then a new runtime on
the same database. Written first, the id must still not let a message handled meanwhile
start a turn that the press, sent before it, then cancels.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import ChannelConfig
from tidings.errors import StoreError
from tidings.testing import writer_gate

from ..until import until
from .conftest import GatedAgent, RecordingChannel

OPS = ChannelConfig("ops")
PRESS = {"chat_id": "c1", "sender_id": "u1"}


def die_after_cancel(channel: RecordingChannel, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the moment a task of *channel* cancels a request, each store write that task
    makes fails: its process died right after the cancel."""
    dead: set[Any] = set()
    cancel, commit = channel.dispatch.cancel, channel.runtime.store.commit

    def cancel_then_die(*args: Any, **kwargs: Any) -> int:
        done = cancel(*args, **kwargs)
        dead.add(trio.lowlevel.current_task())
        return done

    async def commit_unless_dead(*args: Any, **kwargs: Any) -> Any:
        if trio.lowlevel.current_task() in dead:
            raise StoreError("the process died here")
        return await commit(*args, **kwargs)

    monkeypatch.setattr(channel.dispatch, "cancel", cancel_then_die)
    monkeypatch.setattr(channel.runtime.store, "commit", commit_unless_dead)


async def test_a_resent_press_after_a_crash_does_not_cancel_a_later_turn(
        db_path, workspace, monkeypatch) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, OPS, agent=agent)
        assert await channel.say("hello") == "started"
        with trio.fail_after(10):  # real time: the store runs in threads
            await agent.wait_turns(1)
        die_after_cancel(channel, monkeypatch)
        with pytest.raises(StoreError):
            await channel.cancel_turn(**PRESS, press_id="p1")
        with trio.fail_after(10):
            await channel.wait_idle()
        monkeypatch.undo()
    assert len(agent.cancelled_at) == 1  # the press cancelled the first turn, then died
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, OPS, agent=agent)
        # The user speaks again before the platform resends the press.
        assert await channel.say("hi") == "started"
        with trio.fail_after(10):
            await agent.wait_turns(1)
        # The turn it aimed at died with the process: nothing to cancel.
        assert await channel.cancel_turn(**PRESS, press_id="p1") == "nothing"
        assert channel.turn_running(await rt.conversation_session("ops", "ops:chat:c1"))
        assert await channel.cancel_turn(**PRESS, press_id="p1") == "nothing"  # and again
        agent.release()
        with trio.fail_after(10):
            await channel.wait_idle()
    assert agent.cancelled_at == []
    assert [event.type for event in channel.events].count("cancelled") == 0


async def test_a_message_sent_while_a_press_records_its_id_is_not_cancelled(rt) -> None:
    """The press id is written under the conversation's lock: a message handled while that
    write is in flight waits, rather than start a turn that the press before it cancels."""
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, OPS, agent=agent)
    assert await channel.say("hello") == "started"
    with trio.fail_after(10):  # real time: the store runs in threads
        await channel.wait_idle()
    agent.block = True
    outcomes: dict[str, str] = {}

    async def press() -> None:
        outcomes["press"] = await channel.cancel_turn(**PRESS, press_id="p1")

    async def say() -> None:
        outcomes["hi"] = await channel.say("hi")

    with trio.fail_after(10):
        writer = rt.supervisor.mailbox("writer")
        async with trio.open_nursery() as nursery, writer_gate(rt.store) as gate:
            before = writer.depth
            nursery.start_soon(press)
            # Its id's write waits at the gate ("all tasks blocked" also holds while the
            # press still reads in a worker thread: the gate then opened too early).
            await until(lambda: writer.depth > before)
            nursery.start_soon(say)  # no id, no read: it goes straight to the lock
            await trio.testing.wait_all_tasks_blocked()
            gate.release()
        assert outcomes == {"press": "nothing", "hi": "started"}
        await agent.wait_turns(2)  # "hi" reached the agent, not cancelled while it opened
        assert await channel.cancel_turn(**PRESS, press_id="p1") == "nothing"  # a retry
        agent.release()
        await channel.wait_idle()
    assert "cancelled" not in channel.types()
    assert agent.cancelled_at == []
