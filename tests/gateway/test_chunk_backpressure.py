"""Streamed ``text_chunk`` frames and a client's backlog.

An agent streams a reply in many small chunks (the built-in EchoAgent: 16 characters each),
faster than any socket takes them: a 60 KB message made about 3,750 ``lifecycle`` frames,
queued on the connection at once, and a client reading as fast as it could was closed
``4009`` (too slow, ``max_backlog`` 1024 frames) part way through the reply. Once the queue
is deep, a chunk frame still waiting last in it takes the chunks of the same message that
follow it; never across another frame, and a client that does not read is still closed."""

from __future__ import annotations

import json

import trio

from tidings.channels import EchoAgent, GatewayClosed
from tidings.channels._gateway_client import open_transport

from .conftest import TOKEN

_TEXT = "".join(f"{n:05d} the quick brown fox\n" for n in range(2400))  # 60,000 characters


def _numbers(frames: list[dict]) -> list[int]:
    """The chunk numbers ("0,1,2,") the frames' ``text_chunk`` texts carry, in order."""
    text = "".join(f["chunk"] for f in frames if f.get("event") == "text_chunk")
    return [int(n) for n in text.split(",")[:-1]]


async def test_a_client_reading_a_long_streamed_reply_is_not_closed(
        rt, serve_gateway, connect, is_frame) -> None:
    async with serve_gateway(rt, agent=EchoAgent()) as (_gateway, url), \
            connect(url, "alpha") as client:
        with trio.fail_after(60):
            message_id = await client.message(_TEXT)
            try:
                frames = await client.receive_until(is_frame("delivery", kind="message"))
            except GatewayClosed as exc:
                raise AssertionError(f"a reading client was closed: {exc}") from None
    chunks = [f for f in frames if f.get("event") == "text_chunk"]
    assert all(f["message_id"] == message_id for f in chunks)
    assert "".join(f["chunk"] for f in chunks) == _TEXT
    assert next(f["event"] for f in frames if f["type"] == "lifecycle") == "started"
    assert frames[-1]["text"] == _TEXT


class _Streamer:
    """Streams numbered chunks ("0,", "1,", ...) as fast as it can. With ``mid``: ``before``
    chunks, then it sends that message and streams on until the gateway has queued it on the
    connection (``gateway.sent``: nothing else is delivered, and nothing acks it), then
    ``after`` chunks more. Without: until ``stop()``."""

    def __init__(self, *, mid: str | None = None, before: int = 0, after: int = 0,
                 size: int = 1) -> None:
        self.mid, self.before, self.after, self.size = mid, before, after, size
        self.gateway = None
        self.stop = lambda: False
        self.queued_at: int | None = None  # the chunks streamed when the delivery was queued
        self.streamed = 0
        self.done = trio.Event()

    async def _chunk(self, turn) -> None:
        await turn.send_chunk(f"{self.streamed:0{self.size}d},")  # a checkpoint
        self.streamed += 1

    async def run(self, turn) -> None:
        try:
            if self.mid is None:
                while not self.stop() and self.streamed < 200_000:
                    await self._chunk(turn)
                return
            for _ in range(self.before):
                await self._chunk(turn)
            async with trio.open_nursery() as nursery:  # stored and delivered while streaming
                nursery.start_soon(turn.output.send_text, self.mid)
                while not self.gateway.sent:  # the gateway queued it on the connection
                    await self._chunk(turn)
                self.queued_at = self.streamed
                for _ in range(self.after):  # at once, while the queue is still deep
                    await self._chunk(turn)
        finally:
            self.done.set()


async def test_chunks_never_join_across_a_delivery(rt, serve_gateway, connect,
                                                    is_frame) -> None:
    """A delivery queued while chunks stream: every chunk streamed before it comes before it,
    every one after it after it, none lost, none twice, in order (the chunks did join)."""
    agent = _Streamer(mid="in the middle", before=1000, after=1000)
    async with serve_gateway(rt, agent=agent, max_backlog=16) as (gateway, url), \
            connect(url, "alpha") as client:
        agent.gateway = gateway
        with trio.fail_after(60):
            await client.message("go")
            frames = await client.receive_until(is_frame("lifecycle", event="completed"),
                                                ack=False)
    [at] = [i for i, f in enumerate(frames) if f.get("text") == "in the middle"]
    before, after = _numbers(frames[:at]), _numbers(frames[at:])
    assert before + after == list(range(agent.streamed))
    # The last chunk streamed before the gateway was seen to queue the delivery may have
    # been queued just before it, or just after it: no other chunk is on the wrong side.
    assert agent.queued_at - 1 <= len(before) <= agent.queued_at
    chunk_frames = [f for f in frames if f.get("event") == "text_chunk"]
    assert len(chunk_frames) < agent.streamed  # the queue was deep: chunks were joined


async def test_a_client_that_does_not_read_a_stream_is_still_closed(
        rt, serve_gateway, autojump_clock) -> None:
    """Joined chunk frames are bounded: a client that never reads still fills its queue
    (``max_backlog`` frames) while an agent streams, and is closed ``4009``."""
    agent = _Streamer(size=1000)  # chunks of about 1 kB
    async with serve_gateway(rt, agent=agent, max_backlog=16,
                             max_backlog_bytes=1 << 30) as (gateway, url), \
            open_transport(url) as ws:
        await ws.send_message(json.dumps({"type": "hello", "token": TOKEN,
                                          "conversation": "alpha", "protocol": 1}))
        await ws.get_message()  # welcome; nothing is read after it
        [conn] = gateway.hubs[gateway.conversation_named("alpha").key].connections
        agent.stop = lambda: not conn.alive
        with trio.fail_after(120):
            await ws.send_message(json.dumps({"type": "message", "id": "m1", "text": "go"}))
            await agent.done.wait()
        assert conn.close_code == 4009, f"still open after {agent.streamed} chunks"
        assert "16 frames unread" in conn.close_reason
