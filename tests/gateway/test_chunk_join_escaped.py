"""Joined ``text_chunk`` frames stay within their cap when a chunk has a lone surrogate.

Chunks of one message join a ``text_chunk`` frame still waiting in a deep queue, up to 64 KiB
(README, Lifecycle). A chunk with a lone surrogate cannot go out as UTF-8: the frame holding
it is written with JSON escapes, every non-ASCII character of it too (6 bytes a character,
where ``語`` took 3). The joins counted each chunk's UTF-8 bytes, so such a frame went out at
about twice the cap, and the connection's queue counted half what it held.
"""

from __future__ import annotations

import json

import trio

from tidings.channels._gateway_client import open_transport

from .conftest import TOKEN

_CAP = 1 << 16  # README: a frame of up to 64 KiB


class _Streamer:
    """Streams chunks of ``語`` (3 UTF-8 bytes, 6 escaped), every tenth ending in a lone
    surrogate, until ``stop()``; keeps what it streamed."""

    def __init__(self) -> None:
        self.stop = lambda: False
        self.streamed: list[str] = []
        self.done = trio.Event()

    async def run(self, turn) -> None:
        try:
            while not self.stop() and len(self.streamed) < 100_000:
                chunk = "語" * 100 + ("\ud800" if len(self.streamed) % 10 == 9 else "")
                self.streamed.append(chunk)
                await turn.send_chunk(chunk)  # a checkpoint
        finally:
            self.done.set()


async def test_joined_chunk_frames_with_a_lone_surrogate_stay_within_the_cap(
        rt, serve_gateway) -> None:
    agent = _Streamer()
    async with serve_gateway(rt, agent=agent, max_backlog=64) as (gateway, url), \
            open_transport(url) as ws:
        await ws.send_message(json.dumps({"type": "hello", "token": TOKEN,
                                          "conversation": "alpha", "protocol": 1}))
        await ws.get_message()  # welcome; nothing more is read until the agent is done
        [conn] = gateway.hubs[gateway.conversation_named("alpha").key].connections
        counted: list[tuple[int, int]] = []  # (queued_bytes, frames written) at the stop

        def stop() -> bool:  # sync, as the agent is about to stream: nothing moves meanwhile
            if conn.queued_bytes > 1 << 20 or not conn.alive:  # chunks joined
                counted.append((conn.queued_bytes, conn.written))
                return True
            return False

        agent.stop = stop
        with trio.fail_after(60):
            await ws.send_message(json.dumps({"type": "message", "id": "m1", "text": "go"}))
            await agent.done.wait()
            assert conn.alive
            frames: list[tuple[dict, int]] = []  # each frame after the welcome, its bytes
            while not frames or frames[-1][0].get("event") not in ("completed", "failed"):
                raw = await ws.get_message()
                frames.append((json.loads(raw), len(raw.encode("utf-8", "surrogatepass"))))
    chunks = [(frame, size) for frame, size in frames if frame.get("event") == "text_chunk"]
    assert "".join(f["chunk"] for f, _ in chunks) == "".join(agent.streamed)  # all, in order
    assert len(chunks) < len(agent.streamed)  # the queue was deep: chunks were joined
    assert max(size for _, size in chunks) <= _CAP
    # What the queue held at the stop is what went out after the frame being written then
    # (the queue was deep: the writer was in a frame), up to the last chunk.
    [(queued_bytes, written)] = counted
    last = max(i for i, (frame, _) in enumerate(frames) if frame.get("event") == "text_chunk")
    assert queued_bytes == sum(size for _, size in frames[written:last + 1])
