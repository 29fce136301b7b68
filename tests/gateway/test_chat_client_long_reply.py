"""``tidings chat --url`` prints a delivery whole, and a question whole. Before, a delivery's
text was cut at 100,000 characters (and acked: ``sent``, the rest never shown), a prompt's at
2,000 and an approval request's action and details at 500 each, so a person could be asked
to approve what they could not read past its first 500 characters."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator

import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

_REPLY = "".join(f"line {n:06d}\n" for n in range(20_000))  # 240,000 characters
_COMMAND = "echo " + "a" * 600 + " && rm -rf ~/important"


class LongAsker:
    async def run(self, turn) -> None:
        if turn.text == "long":
            await turn.send_chunk(_REPLY)
            return
        question = "Q" * 3000 + " which one?"
        answer = await turn.prompt_user(question, timeout=60)
        decision = await turn.request_approval("run", details={"command": _COMMAND},
                                               timeout=60)
        await turn.send_chunk(f"answer={len(answer or '')} allowed={decision.allowed}")


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        await trio.lowlevel.checkpoint()
        yield line + "\n"


async def test_a_long_reply_is_printed_whole(rt, serve_gateway) -> None:
    out, err = io.StringIO(), io.StringIO()
    async with serve_gateway(rt, agent=LongAsker()) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="long-reply",
                              interactive=False)
        with trio.fail_after(30):
            code = await chat_over_websocket(options, _lines("long"), out=out, err=err)
    assert code == 0, err.getvalue()
    text = out.getvalue()
    assert "…" not in text
    assert text.splitlines() == _REPLY.splitlines()


async def test_a_long_question_is_printed_whole(rt, serve_gateway) -> None:
    out, err = io.StringIO(), io.StringIO()
    async with serve_gateway(rt, agent=LongAsker()) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="long-ask",
                              interactive=False)
        with trio.fail_after(30):
            code = await chat_over_websocket(options, _lines("ask", "x", "n"), out=out,
                                             err=err)
    assert code == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[0] == "? " + "Q" * 3000 + " which one?"
    assert lines[1] == f"? approve run {json.dumps({'command': _COMMAND})} [y/N]"
    assert lines[2:] == ["answer=1 allowed=False"]
