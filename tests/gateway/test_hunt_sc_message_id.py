"""A message's id is remembered once its turn was accepted, even when the connection is
killed right then (too slow, shutdown): a client that resends it after reconnecting (it never
got ``accepted``) must find it a duplicate, not start the turn a second time."""

from __future__ import annotations

import trio

from .test_messages import _until

KEY = "gateway:conv:alpha"


async def test_a_kill_as_the_message_is_accepted_still_remembers_its_id(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt) as (gateway, url):
        original = gateway.handle_inbound
        killed = trio.Event()

        async def handle_inbound(inbound):  # type: ignore[no-untyped-def]
            outcome = await original(inbound)
            if not killed.is_set():
                # The kill that another task (a delivery finding the connection too slow)
                # makes after this task's last checkpoint: nothing runs in between.
                killed.set()
                for conn in list(gateway.hubs[KEY].connections):
                    conn.kill(4008, "too slow")
            return outcome

        gateway.handle_inbound = handle_inbound  # type: ignore[method-assign]
        async with connect(url, "alpha") as one:
            await one.message("once only", message_id="msg-1")
            with trio.fail_after(10):
                await killed.wait()
        await gateway.wait_idle()
        async with connect(url, "alpha") as two:  # resent: it was never accepted
            await two.message("once only", message_id="msg-1")
            [*_, frame] = await _until(two, is_frame("accepted", id="msg-1"))
        await gateway.wait_idle()
    assert frame.get("duplicate") is True, frame
    session_id = await rt.conversation_session("gateway", KEY)
    history = await rt.history(session_id)
    assert [m.text for m in history if m.role == "user"] == ["once only"]


async def test_a_kill_while_a_command_answers_still_remembers_its_id(
        rt, serve_gateway, connect, is_frame) -> None:
    """``/new`` committed its new session, then the connection is killed while the command
    answers: the resent ``/new`` (never accepted) must be a duplicate, not a third session."""
    async with serve_gateway(rt) as (gateway, url):
        async with connect(url, "alpha") as one:  # the conversation's first session
            await one.message("hello", message_id="msg-0")
            await _until(one, is_frame("accepted", id="msg-0"))
        await gateway.wait_idle()
        first = await rt.conversation_session("gateway", KEY)
        original = rt.new_conversation_session
        killed = trio.Event()

        async def new_conversation_session(channel, key, **kwargs):  # type: ignore[no-untyped-def]
            session_id = await original(channel, key, **kwargs)
            if not killed.is_set():  # killed by another task once the rebind committed
                killed.set()
                for conn in list(gateway.hubs[KEY].connections):
                    conn.kill(4008, "too slow")
            return session_id

        rt.new_conversation_session = new_conversation_session  # type: ignore[method-assign]
        async with connect(url, "alpha") as two:
            await two.message("/new", message_id="msg-1")
            with trio.fail_after(10):
                await killed.wait()
        second = await rt.conversation_session("gateway", KEY)
        async with connect(url, "alpha") as three:  # resent: it was never accepted
            await three.message("/new", message_id="msg-1")
            [*_, frame] = await _until(three, is_frame("accepted", id="msg-1"))
        await gateway.wait_idle()
    assert frame.get("duplicate") is True, frame
    assert first != second
    assert await rt.conversation_session("gateway", KEY) == second
