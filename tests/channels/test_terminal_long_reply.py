"""A reply is printed whole by the terminal channel (``tidings chat --local``). Before, every
print was cut at 100,000 characters with an ellipsis: a reply of up to ``MAX_TEXT_BYTES`` (a
file the agent was asked to show, a long listing) lost the rest on the terminal while its
delivery was ``sent``, and nothing in the chat could show it again."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

from tidings.actors import MAX_TEXT_BYTES
from tidings.channels import ChannelConfig
from tidings.channels._terminal import TerminalChannel

_REPLY = "".join(f"line {n:06d}\n" for n in range(20_000))  # 240,000 characters


class LongReply:
    async def run(self, turn) -> None:
        await turn.send_chunk(_REPLY)


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line + "\n"


async def test_a_reply_over_100_000_characters_is_printed_whole(rt) -> None:
    assert 100_000 < len(_REPLY.encode()) <= MAX_TEXT_BYTES
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), agent=LongReply(), out=out)
    await channel.chat(_lines("show me"), one_at_a_time=True)
    text = out.getvalue()
    assert "…" not in text
    assert "line 019999" in text
    lines = text.splitlines()
    start = lines.index("terminal> line 000000")  # then the reply's lines, under its first
    assert [line.strip() for line in lines[start + 1:start + 20_000]] == \
        _REPLY.splitlines()[1:]
