"""Two devices of one conversation: a ``/clear`` from one while a message from the other is
handled, and one ``/clear`` sent again on both at once.

The gateway reads a message's id outside the conversation's lock (within one connection,
frames are handled one at a time), so between two connections a command and a message are
ordered by when each takes that lock. Nothing is lost or done twice for it: a message
handled while a ``/clear`` reads its id starts its turn first, and the ``/clear`` then
cancels it (reason ``clear``, which its device is told) and keeps it in the cleared
session's history; a ``/clear`` sent again on another device while the first is handled is
its duplicate and clears once."""

from __future__ import annotations

import trio
import trio.testing

from .conftest import frame_is
from .test_messages import GatedAgent

KEY = "gateway:conv:alpha"


def _hold_lookup(rt, monkeypatch, message_id: str) -> tuple[trio.Event, trio.Event]:
    """The look-up of *message_id*'s record waits for the second event once the first is
    set (the look-up began)."""
    looking, go_on = trio.Event(), trio.Event()
    outcome = rt.client_message_outcome

    async def held(channel, key, client_id):  # type: ignore[no-untyped-def]
        if client_id == message_id:
            looking.set()
            await go_on.wait()
        return await outcome(channel, key, client_id)

    monkeypatch.setattr(rt, "client_message_outcome", held)
    return looking, go_on


async def test_a_message_handled_while_a_clear_reads_its_id_is_not_lost(
        rt, serve_gateway, connect, monkeypatch) -> None:
    agent = GatedAgent()
    looking, go_on = _hold_lookup(rt, monkeypatch, "a-clear")
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt, agent=agent) as (gateway, url), \
                connect(url, "alpha") as one, connect(url, "alpha") as two:
            await two.message("first", message_id="b-1")
            await two.receive_until(frame_is("delivery", kind="message"))
            cleared = await rt.conversation_session("gateway", KEY)
            await one.message("/clear", message_id="a-clear")
            await looking.wait()
            await two.message("hold:x", message_id="b-2")
            # Handled while the /clear reads its id (outside the lock): its turn starts in
            # the session the /clear then clears.
            frames = await two.receive_until(frame_is("accepted", id="b-2"))
            go_on.set()
            await one.receive_until(frame_is("accepted", id="a-clear"))
            agent.gates["x"].set()
            frames += await two.receive_until(lambda f: frame_is(
                "lifecycle", message_id="b-2")(f) and f["event"] not in ("started",
                                                                          "text_chunk"))
            await two.message("after", message_id="b-3")
            frames += await two.receive_until(lambda f: frame_is(
                "delivery", kind="message")(f) and "after" in f["text"])
            await gateway.wait_idle()
    ends = [(f["event"], f.get("reason")) for f in frames
            if frame_is("lifecycle", message_id="b-2")(f) and f["event"] != "text_chunk"]
    in_cleared = [m.text for m in await rt.history(cleared) if m.role == "user"]
    assert [f["outcome"] for f in frames if frame_is("accepted")(f)] == ["started", "started"]
    assert ends == [("started", None), ("cancelled", "clear")]  # its device is told
    assert in_cleared == ["first", "hold:x"]  # kept in the cleared session's history
    assert frames[-1]["session_id"] not in (cleared, None)  # "after": the next session
    assert await rt.client_message_outcome("gateway", KEY, "b-2") in ("started", "queued")


async def test_a_clear_sent_on_two_devices_at_once_clears_once(
        rt, serve_gateway, connect, monkeypatch) -> None:
    looking, go_on = _hold_lookup(rt, monkeypatch, "clear-1")
    with trio.fail_after(30):  # hang guard
        async with serve_gateway(rt) as (gateway, url), \
                connect(url, "alpha") as one, connect(url, "alpha") as two:
            await one.message("first", message_id="m-1")
            await one.receive_until(frame_is("delivery", kind="message"))
            await one.message("/clear", message_id="clear-1")
            await looking.wait()
            await two.message("/clear", message_id="clear-1")  # the client's resend
            await trio.testing.wait_all_tasks_blocked()
            go_on.set()
            frames = await one.receive_until(frame_is("accepted", id="clear-1"))
            [*_, copy] = await two.receive_until(frame_is("accepted", id="clear-1"))
            await one.message("second", message_id="m-2")
            frames += await one.receive_until(frame_is("delivery", kind="message"))
            await gateway.wait_idle()
    [first] = [f for f in frames if frame_is("accepted", id="clear-1")(f)]
    answers = [f["text"] for f in frames if f["type"] in ("delivery", "notice")
               and f.get("command") == "clear"]
    assert (first["outcome"], copy.get("duplicate")) == ("command", True)
    assert answers == ["Cleared. Your next message starts a new session."]  # once, not twice
