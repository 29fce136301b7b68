"""``tidings chat --url`` tells history from news after a reconnect by a row's ``created_at``
against its first welcome's ``server_time`` (see test_chat_client_caught_up_news.py). A reply
whose send began before the chat's first welcome but whose write committed after it (the
writer busy meanwhile) was written after the chat began: news. Its ``created_at`` was read as
the send built the row, before its commit, so it came out earlier than that welcome's
``server_time``; caught up later, the chat took it for history, acked it and never showed it.

A real gateway (real time, as test_chat_client_caught_up_news.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import trio
import trio.testing

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket
from tidings.testing import writer_gate

from .chat_doubles import HeldAgent, HeldBackConnector, leave_a_turn_running
from .conftest import TOKEN, Transcript

CONVERSATION = "in-flight"


async def test_a_reply_committed_after_the_first_welcome_is_news(
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
                async with writer_gate(rt.store) as gate:
                    agent.release.set()  # the late reply's write waits behind the gate
                    while not rt.pipeline._writing.get(old):
                        await trio.testing.wait_all_tasks_blocked()

                    async def lines() -> AsyncIterator[str]:
                        await connector.dropped.wait()
                        gate.release()  # the reply commits now, the chat away
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
