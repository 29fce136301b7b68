"""tidings chat (--url) when a question it shows closes without its answer (its time ran out,
another device answered it, the turn that asked ended): the client forgot the question but
said nothing, so the person, still looking at it, typed an answer that went out as a message
(and steered, cancelling the running turn). It says ``(question closed: <reason>)`` now."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import trio

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import GatedClient, Transcript


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


class AsksThenWorks:
    """Asks ``name?`` (expiring in 5 s), then works on, whatever the answer, until cancelled:
    a line sent as a message steers it (``(cancelled: steer)``)."""

    def __init__(self) -> None:
        self.unanswered = trio.Event()

    async def run(self, turn: Any) -> None:
        if turn.text != "go":
            await turn.send_chunk(f"message={turn.text}")
            return
        await turn.prompt_user("name?", timeout=5)
        self.unanswered.set()
        await trio.sleep_forever()


async def test_a_question_that_expires_while_reconnecting_is_said_closed(
        rt, serve_gateway, monkeypatch, autojump_clock) -> None:
    # The question expired while the chat was away: no prompt_closed reached it, and the
    # server did not ask it again. It was forgotten silently at the welcome, so the person,
    # still looking at '? name?', typed the answer, which went as a message and steered
    # (cancelled) the turn that asked.
    gated = GatedClient()
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    monkeypatch.setattr(_chat_ws, "GatewayClient", gated)
    agent = AsksThenWorks()
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=agent) as (gateway, url):

        async def lines() -> AsyncIterator[str]:
            yield "go\n"
            await out.wait_for(lambda line: line == "? name?")
            [conn] = gateway.hubs[gateway.conversation_named("qa").key].connections
            conn.kill(4009, "too slow")  # away: held at the gate
            await err.wait_for(lambda line: line.endswith("reconnecting"))
            await agent.unanswered.wait()  # expired, told to nobody
            gated.back.set()
            # The chat reads this only once the server has said what still waits (nothing).
            yield "Ada\n"
            await out.wait_for(lambda line: line == "message=Ada")

        options = ChatOptions(url=url, token="gateway-test-token", conversation="qa",
                              interactive=True)
        with trio.fail_after(60):  # hang guard
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    # Said closed before the line was read (before what the line did): the person knows
    # that 'Ada' is a message.
    shown = out.getvalue().splitlines()
    assert shown[:2] == ["? name?", "(question closed while reconnecting)"], shown
    assert shown[-1] == "message=Ada"
