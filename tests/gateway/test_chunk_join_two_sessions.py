"""Streamed chunks of two sessions of one conversation, interleaved in one client's backlog.

``/new`` leaves the old session's running turn going on, so a connection may get the
``text_chunk`` frames of two turns at once, alternating. Joining only looked at the queue's
last frame, always the other message's: nothing joined, and a client the streams outran was
closed ``4009`` (``max_backlog``) where one stream alone would have been joined and kept.
A chunk now joins its own message's waiting frame across the other session's frames, never
across a frame of its own session, and each message's text stays in order."""

from __future__ import annotations

import trio

from tidings.channels import GatewayChannel, GatewayConfig
from tidings.channels._lifecycle import TaskTextChunk

from .conftest import TOKEN


class _Waiting:
    """An agent whose turns wait until the test lets them end."""

    def __init__(self) -> None:
        self.release = trio.Event()

    async def run(self, turn) -> None:
        await self.release.wait()


class _Recording(GatewayChannel):
    """Keeps each turn's ``started`` event, to stream chunks in its name."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.started: dict[str, object] = {}

    def on_task_lifecycle(self, event) -> None:
        if event.type == "started":
            self.started[event.message_id] = event
        super().on_task_lifecycle(event)


def _chunk(started, text: str) -> TaskTextChunk:
    return TaskTextChunk(chunk=text, channel_name=started.channel_name, chat_id=started.chat_id,
                         session_id=started.session_id, identity=started.identity,
                         memory_scope=started.memory_scope, message_id=started.message_id)


async def test_alternating_streams_of_two_sessions_join_and_keep_the_client(
        rt, connect, is_frame) -> None:
    agent = _Waiting()
    gateway = _Recording(rt, GatewayConfig(token=TOKEN, port=0, max_backlog=16,
                                           max_backlog_bytes=1 << 30), agent=agent)
    try:
        async with gateway.serving() as port, \
                connect(f"ws://127.0.0.1:{port}", "alpha") as client:
            with trio.fail_after(60):
                first = await client.message("one")
                await client.receive_until(is_frame("lifecycle", event="started"))
                await client.message("/new")  # the first turn goes on
                await client.receive_until(lambda f: f.get("type") == "delivery")
                second = await client.message("two")
                await client.receive_until(lambda f: f.get("event") == "started"
                                           and f.get("message_id") == second)
                a, b = gateway.started[first], gateway.started[second]
                assert a.session_id != b.session_id
                [conn] = gateway.hubs[gateway.conversation_named("alpha").key].connections
                # No checkpoint between them: the connection's writer takes none of them.
                for n in range(64):
                    gateway.on_task_lifecycle(_chunk(a, f"a{n},"))
                    gateway.on_task_lifecycle(_chunk(b, f"b{n},"))
                assert conn.alive, f"closed {conn.close_code}: {conn.close_reason}"
                texts = {first: "", second: ""}
                want = {first: "".join(f"a{n}," for n in range(64)),
                        second: "".join(f"b{n}," for n in range(64))}
                while texts != want:
                    frame = await client.receive()
                    if frame.get("event") == "text_chunk":
                        texts[frame["message_id"]] += frame["chunk"]
                        assert want[frame["message_id"]].startswith(texts[frame["message_id"]])
                agent.release.set()
    finally:
        agent.release.set()
        with trio.CancelScope(shield=True):
            await gateway.aclose()
