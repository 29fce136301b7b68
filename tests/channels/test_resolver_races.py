"""A channel's router resolver (the route of a session of a conversation it evicted) reads the
conversation's current session from the store, then checks it has no ``unrouted`` rows, then
binds: two awaits. A ``/new`` (or ``/clear`` and the next message) of the conversation handled
meanwhile moves it to another session; the resolver must not bind the session it left then,
or a row written there later goes to the chat at once, where a left session's rows wait for
the conversation's next message (``unrouted``, then handed back), and the stray binding stays
until the conversation switches again."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

import pytest
import trio

from tidings.channels import ChannelConfig

from .test_idle_conversations import SmallChannel, _serve


@pytest.mark.parametrize("switch", ["/new", "/clear"])
async def test_a_resolver_does_not_bind_the_session_its_conversation_left_meanwhile(
        switch, rt, autojump_clock) -> None:
    channel = SmallChannel(rt, ChannelConfig(name="ops"))
    sessions = await _serve(channel)
    left = sessions["c0"]
    assert rt.router.binding(left) is None  # evicted
    async with _resolving_held(rt, left):  # it read that c0's current session is `left`
        await channel.say(switch, chat_id="c0")
        await channel.say("moved on", chat_id="c0")
        await channel.wait_for(lambda: "moved on" in channel.texts("message"))
        assert _current_of(channel, "moved on") != left
    assert rt.router.binding(left) is None
    late = await rt.notify(left, "late news")
    with trio.fail_after(60):
        assert await late.wait() == "unrouted"  # handed back at c0's next message, as before


@contextlib.asynccontextmanager
async def _resolving_held(rt, session_id: str) -> AsyncIterator[None]:
    """``rt.router.resolve(session_id)`` running, held at its second store read (whether the
    session has ``unrouted`` rows) from the moment it has read the conversation's current
    session until the block ends."""
    entered, go = trio.Event(), trio.Event()
    real = rt.stored_deliveries

    async def paused(*args, **kwargs):
        entered.set()
        await go.wait()
        return await real(*args, **kwargs)

    rt.stored_deliveries = paused
    async with trio.open_nursery() as nursery:
        nursery.start_soon(rt.router.resolve, session_id)
        await entered.wait()
        rt.stored_deliveries = real
        try:
            yield
        finally:
            go.set()


def _current_of(channel: SmallChannel, text: str) -> str | None:
    [session_id] = {o.session_id for o in channel.outbounds if o.text == text}
    return session_id


@pytest.mark.parametrize("switch", ["/new", "/clear"])
async def test_a_resolver_does_not_bind_a_left_session_after_a_switch_and_an_eviction(
        switch, rt, autojump_clock) -> None:
    """The conversation moves on during the resolver's reads and is evicted again before it
    binds: the directory has forgotten the switch, yet the session read is no longer the
    conversation's current one."""
    channel = SmallChannel(rt, ChannelConfig(name="ops"))
    sessions = await _serve(channel)
    left = sessions["c0"]
    async with _resolving_held(rt, left):  # it read that c0's current session is `left`
        await channel.say(switch, chat_id="c0")
        await channel.say("moved on", chat_id="c0")
        await channel.wait_for(lambda: "moved on" in channel.texts("message"))
        moved = _current_of(channel, "moved on")
        assert moved != left
        for n in range(1, 8):  # the others speak again: c0 is evicted once more
            await channel.say(f"again {n}", chat_id=f"c{n}")
            await channel.wait_for(lambda n=n: f"again {n}" in channel.texts("message"))
        await channel.wait_idle()
        await trio.sleep(60)
        assert channel.conversation_of(moved) is None
    assert rt.router.binding(left) is None
    late = await rt.notify(left, "late news")
    with trio.fail_after(60):
        assert await late.wait() == "unrouted"
