"""``tidings chat --url`` shows no history from before it began, but what was written while it
was away it shows, also in a session it never saw that the gateway catches it up on later
(``catch_up``): a late reply in a session another device's ``/new`` left before the chat began,
written while the chat was away, comes when another device ``/resume``s that session, among its
earlier rows. The chat took every caught-up row of a session it had seen nothing of for history:
that reply was acked and never shown. A caught-up frame says when its row was written
(``created_at``), the first welcome the server's time (``server_time``): only the rows before it
are history. A caught-up row is still never followed (see test_review_chat_catch_up_history.py).

A real gateway (real time, as test_review_chat_resume_while_away.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import trio

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .chat_doubles import HeldAgent, HeldBackConnector, leave_a_turn_running
from .conftest import TOKEN, Transcript

CONVERSATION = "news"


async def test_a_caught_up_reply_written_while_the_chat_was_away_is_shown(
        rt, serve_gateway, connect, is_frame, monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    agent = HeldAgent("slow")
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=agent) as (gateway, url):
        connector = HeldBackConnector(gateway, CONVERSATION)
        monkeypatch.setattr(_chat_ws, "GatewayClient", connector)
        with trio.fail_after(20):  # real time
            async with connect(url, CONVERSATION) as other:
                old = await leave_a_turn_running(other, is_frame, agent)

                async def lines() -> AsyncIterator[str]:
                    await connector.dropped.wait()
                    agent.release.set()  # the late reply, written while the chat is away
                    await other.receive_until(is_frame("delivery", text="slow"))
                    connector.go.set()
                    await connector.welcomed.wait()
                    await other.message(f"/resume {old}", message_id="o4")
                    await out.wait_for(lambda line: line.startswith("* Resumed"))
                    yield "bye\n"
                    await out.wait_for(lambda line: line == "bye")

                options = ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION,
                                      interactive=True)
                code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == ["slow", f"* Resumed session {old}.", "bye"]
