"""Races on the inbound side found by a bug hunt: each test forces one interleaving."""

from __future__ import annotations

import pathlib

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import ChannelConfig, Inbound

from .conftest import GatedAgent, RecordingChannel


@pytest.mark.parametrize("command", ["/new", "/clear"])
async def test_a_read_only_command_racing_a_switch_leaves_no_stale_session_cached(
        db_path: pathlib.Path, workspace: pathlib.Path, command: str,
        autojump_clock: trio.testing.MockClock) -> None:
    """``/status`` reads the conversation's session from the store (nothing cached yet, as
    after a restart) while ``/new`` rebinds it (or ``/clear`` forgets it): the read's older
    answer must not replace what the switch decided, or the next message runs in the old
    (maybe cleared) session."""
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0.5) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=GatedAgent(block=False))
        await channel.say("hello")
        await channel.wait_idle()
    agent = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0.5) as rt:
        channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
        conversation = channel.conversation_for(Inbound(chat_id="c1", sender_id="u1", text="x"))
        old = await rt.conversation_session("ops", conversation.key)
        read_done = trio.Event()
        go_on = trio.Event()
        original = rt.conversation_session

        async def slow_read(name: str, key: str) -> str | None:
            session_id = await original(name, key)
            read_done.set()
            await go_on.wait()
            return session_id

        rt.conversation_session = slow_read  # type: ignore[method-assign]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(channel.say, "/status")
            await read_done.wait()
            switched = trio.Event()

            async def switch() -> None:
                await channel.say(command)
                switched.set()

            nursery.start_soon(switch)
            with trio.move_on_after(5):  # it may wait for the lookup to end: then time out
                await switched.wait()
            go_on.set()
        rt.conversation_session = original  # type: ignore[method-assign]
        await channel.say("in the new session")
        await channel.wait_idle()
        durable = await rt.conversation_session("ops", conversation.key)
        assert channel.directory.cached(conversation) == durable
        assert agent.turns[-1].session_id == durable != old
