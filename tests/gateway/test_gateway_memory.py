"""What the gateway keeps per session, per conversation and per connection stays bounded: a
server that runs for weeks serves many sessions and conversations, and a slow client cannot
pin more than its byte budget of queued frames."""

from __future__ import annotations

from collections.abc import Callable

import trio
import trio.testing

from .conftest import frame_is


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
