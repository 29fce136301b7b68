"""``producer | tidings chat --url``: a piped line longer than the server's ``max_frame_bytes``
is refused as soon as that many bytes of it are read, its bytes are skipped up to its newline
(never held), and the chat goes on. Before, the reader held the whole line until its newline:
``cat bigfile.bin | tidings chat`` grew without bound, and said nothing until the end."""

from __future__ import annotations

import os
import sys

import pytest
import trio

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions

from .conftest import Transcript


async def test_a_piped_line_over_the_frame_limit_is_refused_before_its_newline(
        rt, serve_gateway, monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    writer = trio.lowlevel.FdStream(write_end)
    out = Transcript()
    code: int | None = None
    async with serve_gateway(rt, max_frame_bytes=256) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="long",
                              interactive=False)

        async def chat() -> None:
            nonlocal code
            code = await _chat_ws._until_interrupted(options, {})

        with open(read_end, encoding="utf-8") as stdin:  # noqa: ASYNC230 - never read here
            monkeypatch.setattr(sys, "stdin", stdin)
            monkeypatch.setattr(sys, "stdout", out)
            with trio.fail_after(20):  # a guard against hanging, not a wait
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(chat)
                    async with writer:
                        await writer.send_all(b"one\n")
                        await out.wait_for(lambda line: line == "one")
                        # 4 MiB of one line, no newline yet: refused once 256 bytes are in,
                        # while the rest is still coming (the old reader waited for the end)
                        await writer.send_all(b"x" * (1 << 20))
                        await out.wait_for(lambda line: line.startswith("!"))
                        await writer.send_all(b"y" * (3 << 20) + b"\ntwo\n")
    assert code == 0
    lines = out.getvalue().splitlines()
    assert lines[0] == "one"
    assert lines[1] == ("! not sent: the line is over 256 bytes as a frame (the server's "
                        "max_frame_bytes); the rest of it is skipped")  # worded as a typed one
    assert lines[2:] == ["two"]  # the rest of the long line was skipped, not sent as a line
