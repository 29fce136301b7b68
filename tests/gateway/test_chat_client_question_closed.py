"""tidings chat (--url) when a question it shows closes without its answer (its time ran out,
another device answered it, the turn that asked ended): the client forgot the question but
said nothing, so the person, still looking at it, typed an answer that went out as a message
(and steered, cancelling the running turn). It says ``(question closed: <reason>)`` now."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript


class AsksBriefly:
    """Asks ``quick?`` with a short expiry, then says what it got."""

    async def run(self, turn: Any) -> None:
        answer = await turn.prompt_user("quick?", timeout=5)
        await turn.send_chunk(f"got={answer}")


async def test_a_question_that_closes_unanswered_is_said_closed(rt, serve_gateway,
                                                               autojump_clock) -> None:
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=AsksBriefly()) as (_gateway, url):

        async def lines() -> AsyncIterator[str]:
            yield "go\n"
            await out.wait_for(lambda line: line.startswith("got="))

        options = ChatOptions(url=url, token="gateway-test-token", conversation="qc",
                              interactive=True)
        with trio.fail_after(60):  # hang guard
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    shown = out.getvalue().splitlines()
    assert shown[0] == "? quick?"
    assert shown[1] == "(question closed: expired)"
    assert shown[2].startswith("got=")
