"""``tidings chat --url --chunks`` prints a streamed chunk whole, as it prints the reply.
Before, a chunk's line was cut at 2,000 characters with an ellipsis: the rest of what the
agent streamed was never shown as it came (a frame joins a slow reader's chunks, up to 64 KiB,
so under load most of the stream went), and the cut fell in the middle of a word or of a
character made of several code points."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

_CHUNK = " ".join(f"word{n}" for n in range(1000))  # 6,889 characters


class Streamer:
    async def run(self, turn) -> None:
        await turn.send_chunk(_CHUNK)


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        await trio.lowlevel.checkpoint()
        yield line + "\n"


async def test_a_long_chunk_is_printed_whole(rt, serve_gateway) -> None:
    out, err = io.StringIO(), io.StringIO()
    async with serve_gateway(rt, agent=Streamer()) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="chunk",
                              interactive=False, show_chunks=True)
        with trio.fail_after(30):
            code = await chat_over_websocket(options, _lines("go"), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [f"~ {_CHUNK}", _CHUNK]
