"""``tidings chat --url`` indents the later lines of a multi-line notice or progress delivery
under its first, after the mark (``* ``, ``... ``), as ``tidings chat --local`` prints them
(``TerminalChannel._print``). Before, they started at the margin, where they read as lines of
a reply of their own."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket


class Announcer:
    async def run(self, turn) -> None:
        await turn.output.progress("working\nstep 2 of 3")
        await turn.output.notice("heads up:\nthe disk is\nnearly full")
        await turn.send_chunk("done\nreally")


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        await trio.lowlevel.checkpoint()
        yield line + "\n"


async def test_the_later_lines_of_a_notice_are_indented_as_in_the_local_chat(
        rt, serve_gateway) -> None:
    out, err = io.StringIO(), io.StringIO()
    async with serve_gateway(rt, agent=Announcer()) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="multiline",
                              interactive=False)
        with trio.fail_after(30):
            code = await chat_over_websocket(options, _lines("go"), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [
        "... working",
        "    step 2 of 3",
        "* heads up:",
        "  the disk is",
        "  nearly full",
        "done",  # a reply has no mark: its lines keep the margin, as typed
        "really",
    ]
