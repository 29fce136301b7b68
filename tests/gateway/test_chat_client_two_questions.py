"""tidings chat (--url) with two questions open at once in its conversation (an agent that
asks two things concurrently, or a second turn asking while the first waits): the next lines
answer them oldest first, as --local's terminal channel does. The client kept one question
only, the last one printed: the first line answered the second question, the next line went
as a message (which steered, cancelling the turn that asked both), and the first question was
left on the screen for nobody, waiting for its whole timeout."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript


class AsksTwo:
    """Asks ``first?`` and ``second?`` at once, then replies with both answers."""

    async def run(self, turn: Any) -> None:
        answers: dict[str, str | None] = {}

        async def ask(text: str) -> None:
            answers[text] = await turn.prompt_user(text, timeout=60)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(ask, "first?")
            nursery.start_soon(ask, "second?")
        await turn.send_chunk(f"first={answers['first?']} second={answers['second?']}")


async def test_two_open_questions_are_answered_oldest_first(rt, serve_gateway) -> None:
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=AsksTwo()) as (_gateway, url):

        async def lines() -> AsyncIterator[str]:
            yield "go\n"
            await out.wait_for(lambda line: line == "? second?")
            await out.wait_for(lambda line: line == "? first?")
            yield "one\n"
            yield "two\n"
            # (a line taken for a message steers: the turn that asked both is cancelled)
            await out.wait_for(lambda line: line.startswith(("first=", "(cancelled")))

        options = ChatOptions(url=url, token="gateway-test-token", conversation="q2",
                              interactive=True)
        with trio.fail_after(20):  # hang guard
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    # (asked at once: in either order; the one printed first is the one the first line answers)
    *asked, reply = out.getvalue().splitlines()
    assert sorted(asked) == ["? first?", "? second?"]
    answers = {asked[0][2:]: "one", asked[1][2:]: "two"}
    assert reply == f"first={answers['first?']} second={answers['second?']}"
