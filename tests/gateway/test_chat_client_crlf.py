"""``tidings chat --url`` reading CRLF lines (a script saved on Windows, ``printf 'hi\\r\\n'``):
each line's ``\\r\\n`` ends it, as in ``tidings chat --local`` (the terminal channel strips
both), and is not sent. Before, only the ``\\n`` was taken off: every message and every
answer to a prompt reached the agent with a trailing carriage return."""

from __future__ import annotations

import io

import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket


class Recording:
    """An agent that keeps each message it is given, and the answer to ``ask:`` prompts."""

    def __init__(self) -> None:
        self.seen: list[str | None] = []

    async def run(self, turn) -> None:  # type: ignore[no-untyped-def]
        self.seen.append(turn.text)
        if turn.text.startswith("ask:"):
            self.seen.append(await turn.prompt_user(turn.text[4:], timeout=60))
        await turn.send_chunk("ok")


async def _lines(*lines: str):
    for line in lines:
        await trio.lowlevel.checkpoint()
        yield line


async def test_a_crlf_line_is_sent_without_its_carriage_return(rt, serve_gateway) -> None:
    agent = Recording()
    async with serve_gateway(rt, agent=agent) as (_gateway, url):
        out, err = io.StringIO(), io.StringIO()
        options = ChatOptions(url=url, token="gateway-test-token", conversation="crlf",
                              interactive=False)
        with trio.fail_after(20):  # a guard against hanging, not a wait
            code = await chat_over_websocket(
                options, _lines("hello\r\n", "ask:your name?\r\n", "Ada\r\n", "last\r"),
                out=out, err=err)
    assert code == 0, err.getvalue()
    assert agent.seen == ["hello", "ask:your name?", "Ada", "last"]
