"""What the gateway keeps per session, per conversation and per connection stays bounded: a
server that runs for weeks serves many sessions and conversations, and a slow client cannot
pin more than its byte budget of queued frames."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
import trio
import trio.testing

from tidings.channels import GatewayConfig
from tidings.channels._gateway_client import open_transport
from tidings.errors import ConfigError

from ..real_time import fail_after_real
from .conftest import TOKEN, Asker, frame_is


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
    """Sessions of one conversation, each answered, acked and left with ``/new`` by its own
    connection: the gateway keeps entries only for sessions the directory still holds (it
    kept one per session ever served, 7 here: the bound of 2 is the check, so 6 sessions
    show a leak as surely as 30 did)."""
    async with serve_gateway(rt) as (gateway, url):
        for _ in range(6):
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
    """Conversations, each answered then disconnected: no hub is kept for them (one hub, a
    list and an event were kept per conversation ever connected; none is the check, so 4
    conversations show it)."""
    async with serve_gateway(rt) as (gateway, url):
        for i in range(4):
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


async def test_a_delivery_with_nobody_connected_keeps_no_hub(rt, serve_gateway,
                                                              connect) -> None:
    """A row written while nobody is connected is ``unrouted`` at once, not held in
    ``deliver()`` on the hub (which kept the conversation for as long as nobody came): no
    hub stays, and the client that comes back gets it from its hello."""
    async with serve_gateway(rt) as (gateway, url):
        with trio.fail_after(10):
            async with connect(url, "alpha") as client:
                await _answered(client, "hi")
                session_id = client.session_id
        with trio.fail_after(10):
            note = await rt.notify(session_id, "while you were away")
            assert await note.wait() == "unrouted"
            assert await _until(lambda: not gateway.hubs and not gateway._delivering)
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


async def test_a_client_that_does_not_read_is_closed_at_its_byte_budget(
        rt, serve_gateway, mock_clock) -> None:
    """Big deliveries to a client that never reads: it is closed ``4009`` once its queue
    would pass ``max_backlog_bytes``, long before ``max_backlog`` frames (1024 frames of up
    to 2 MiB each let one slow client pin gigabytes). Its rows stay for the replay."""
    big = "x" * 60_000  # a delivery frame carries the text twice: ~120 kB
    budget = 1 << 20
    async with serve_gateway(rt, ack_window=5000, max_backlog_bytes=budget) as (gateway, url), \
            open_transport(url) as ws:
        await ws.send_message(json.dumps({"type": "hello", "token": TOKEN,
                                          "conversation": "alpha", "protocol": 1}))
        session_id = json.loads(await ws.get_message())["session_id"]
        [conn] = gateway.hubs[gateway.conversation_named("alpha").key].connections
        most = notes = 0
        with fail_after_real(60):
            while conn.alive and notes < 1100:
                await rt.notify(session_id, big)
                notes += 1
                await trio.testing.wait_all_tasks_blocked()
                most = max(most, conn.queued_bytes)
        assert conn.close_code == 4009, f"still open after {notes} deliveries"
        assert f"over {budget} bytes unread" in conn.close_reason
        assert most <= budget
        assert notes < 300  # the socket buffers take a few MB; 1024 frames is ~120 MB
        mock_clock.jump(10)  # the close handshake with a client that never reads gives up
    unsent = await rt.stored_deliveries(session_id, statuses=("queued", "sending", "unknown"))
    assert len(unsent) > notes // 2  # nothing lost: what it did not ack waits for after_seq


def test_max_backlog_bytes_is_validated_by_name() -> None:
    assert GatewayConfig(token="t" * 16).max_backlog_bytes == 16 * 1024 * 1024
    assert GatewayConfig.from_mapping({"token": "t" * 16, "max_backlog_bytes": 65536}
                                      ).max_backlog_bytes == 65536
    for bad in (1024, "16MiB", True, 1.5e6):
        with pytest.raises(ConfigError) as caught:
            GatewayConfig(token="t" * 16, max_backlog_bytes=bad)
        assert caught.value.field == "gateway.max_backlog_bytes"


async def test_replayed_rows_nobody_acked_are_not_kept_in_sent(rt, serve_gateway,
                                                               connect) -> None:
    """Conversations whose client takes a reply, never acks it, leaves, comes back for the
    replay and leaves again without acking: nothing of theirs stays in ``gateway.sent`` (a
    replayed ``unknown`` row was kept there for good: the leave turns only the lane's unacked
    rows ``unknown`` and forgets those)."""
    async with serve_gateway(rt) as (gateway, url):
        for i in range(3):  # an empty ``sent`` is the check: a few conversations show a leak
            with trio.fail_after(10):
                async with connect(url, f"conv-{i}") as client:
                    await client.message("hi")
                    await client.receive_until(frame_is("delivery", kind="message"), ack=False)
                assert await _until(lambda: not gateway.hubs)
                async with connect(url, f"conv-{i}", after_seq=0) as client:
                    await client.receive_until(frame_is("delivery", kind="message"), ack=False)
                assert await _until(lambda: not gateway.hubs)
        assert gateway.sent == {}
        # An ack after coming back still confirms the row (a store read instead of a free one).
        with trio.fail_after(10):
            async with connect(url, "conv-0", after_seq=0) as client:
                frames = await client.receive_until(frame_is("delivery", kind="message"),
                                                    ack=False)
                await client.ack(frames[-1]["delivery_id"])
                await client.sync()
                await client.receive_until(frame_is("synced"))
        [row] = await rt.stored_deliveries(client.session_id, kinds=("message",))
        assert row.status == "sent"
