"""What the gateway keeps per session, per conversation and per connection stays bounded: a
server that runs for weeks serves many sessions and conversations, and a slow client cannot
pin more than its byte budget of queued frames."""

from __future__ import annotations

from collections.abc import Callable

import trio
import trio.testing

from .conftest import Asker, frame_is


async def _until(done: Callable[[], bool], *, wait: float = 10.0) -> bool:
    """Let the server's tasks (and their store writes in threads) run until *done()*, for at
    most *wait* seconds; whether it came true."""
    with trio.move_on_after(wait):
        while not done():
            await trio.testing.wait_all_tasks_blocked()
            await trio.lowlevel.checkpoint()
    return done()


async def _answered(client, text: str) -> None:
    """Send *text* and read (acking) up to its answer."""
    await client.message(text)
    await client.receive_until(frame_is("delivery", kind="message"))


async def test_session_keys_keep_no_entry_per_session_the_directory_forgot(
        rt, serve_gateway, connect, wait_status) -> None:
    """30 sessions of one conversation, each answered, acked and left with ``/new`` by its
    own connection: the gateway keeps entries only for sessions the directory still holds
    (it kept one per session ever served, 31 here)."""
    async with serve_gateway(rt) as (gateway, url):
        for _ in range(30):
            with trio.fail_after(10):
                async with connect(url, "alpha") as client:
                    await client.message("hi")
                    [delivery] = [f for f in await client.receive_until(
                        frame_is("delivery", kind="message")) if f["type"] == "delivery"]
                    await wait_status(rt, delivery["delivery_id"], "sent")
                    await client.message("/new")
                    await client.receive_until(frame_is("accepted"))
        assert set(gateway.session_keys) <= set(gateway.directory.sessions())
        assert len(gateway.session_keys) <= 2
        # The current session is still served: a reconnecting client is answered there.
        with trio.fail_after(10):
            async with connect(url, "alpha") as client:
                await _answered(client, "still here")
                assert client.session_id in gateway.session_keys


async def test_hubs_of_conversations_nobody_is_connected_to_are_dropped(
        rt, serve_gateway, connect) -> None:
    """16 conversations, each answered then disconnected: no hub is kept for them (one hub,
    a list and an event were kept per conversation ever connected)."""
    async with serve_gateway(rt) as (gateway, url):
        for i in range(16):
            with trio.fail_after(10):
                async with connect(url, f"conv-{i}") as client:
                    await _answered(client, "hi")
        assert await _until(lambda: not gateway.hubs), f"{len(gateway.hubs)} hubs kept"
        # A conversation that comes back gets a fresh hub and is served as before.
        with trio.fail_after(10):
            async with connect(url, "conv-3") as client:
                await _answered(client, "again")
                assert [c.conversation.chat_id for h in gateway.hubs.values()
                        for c in h.connections] == ["conv-3"]


async def test_a_delivery_waiting_for_a_client_keeps_its_hub(rt, serve_gateway,
                                                             connect) -> None:
    """A reply written while nobody is connected waits in ``deliver()`` on the hub: the hub
    stays, and the client that comes back gets the reply (a hub dropped under the waiting
    delivery would never wake it)."""
    async with serve_gateway(rt) as (gateway, url):
        with trio.fail_after(10):
            async with connect(url, "alpha") as client:
                await _answered(client, "hi")
                session_id = client.session_id
        key = gateway.conversation_named("alpha").key
        with trio.fail_after(10):
            await rt.notify(session_id, "while you were away")
            assert await _until(lambda: gateway._delivering == 1)
            assert key in gateway.hubs
            async with connect(url, "alpha", after_seq=client.seen[session_id]) as client:
                frames = await client.receive_until(frame_is("delivery", kind="notice"))
                assert frames[-1]["text"] == "while you were away"
        assert await _until(lambda: not gateway.hubs)


async def test_a_prompt_closed_reaches_a_client_that_came_back(rt, serve_gateway,
                                                              connect) -> None:
    """A question asked while a client was connected, answered by a client that left and
    came back: the ``prompt_closed`` goes to the conversation's connections now, not to the
    hub of the first connection."""
    async with serve_gateway(rt, agent=Asker()) as (gateway, url):
        with trio.fail_after(10):
            async with connect(url, "alpha") as client:
                await client.message("ask:colour?")
                prompt = (await client.receive_until(frame_is("prompt")))[-1]
        assert await _until(lambda: not any(h.connections for h in gateway.hubs.values()))
        with trio.fail_after(10):
            async with connect(url, "alpha") as client:
                again = await client.receive_until(frame_is("prompt"))
                assert again[-1]["prompt_id"] == prompt["prompt_id"]
                await client.send({"type": "answer", "prompt_id": prompt["prompt_id"],
                                   "text": "blue"})
                frames = await client.receive_until(frame_is("delivery", kind="message"))
                assert {"type": "prompt_closed", "id": prompt["prompt_id"],
                        "reason": "answered"} in frames
                assert frames[-1]["text"] == "answer: blue"

