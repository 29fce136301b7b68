"""``tidings chat --url`` shows no history (README). After a reconnect whose hello names the
session the chat was in, while another device ``/resume``'d an older session the chat never
saw, the gateway replays the conversation's current session from its start
(channels/_gateway_admit.py): that session's rows from before the chat began come as any
replayed row does, and the chat prints them before the ``/resume`` answer, as if new.

Unlike the catch-up (its frames say ``"catch_up": true``, see test_catch_up_marked.py), such a
replay mixes history with news written while the chat was away (the answer itself, replies
after it). A replayed frame now says when its row was written (``created_at``), and the
welcome the server's time (``server_time``): the chat shows none of a session it never saw
written before its first welcome, and the ``/resume`` answer, written after.

A real gateway (real time, as test_chat_client_history_kept_out.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import trio

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .chat_doubles import HeldBackConnector
from .conftest import TOKEN, Transcript

CONVERSATION = "away"


async def test_a_session_resumed_while_the_chat_was_away_brings_no_history(
        rt, serve_gateway, connect, is_frame, monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (gateway, url):
        connector = HeldBackConnector(gateway, CONVERSATION)
        monkeypatch.setattr(_chat_ws, "GatewayClient", connector)
        with trio.fail_after(20):  # real time
            async with connect(url, CONVERSATION) as other:
                await other.message("yesterday", message_id="o1")
                [*_, reply] = await other.receive_until(is_frame("delivery", kind="message"))
                old = reply["session_id"]
                await other.message("/new", message_id="o2")
                await other.receive_until(is_frame("delivery", command="new"))

                async def lines() -> AsyncIterator[str]:
                    await connector.dropped.wait()
                    await other.message(f"/resume {old}", message_id="o3")
                    await other.receive_until(is_frame("delivery", command="resume"))
                    connector.go.set()
                    await connector.welcomed.wait()
                    await out.wait_for(lambda line: line.startswith("* Resumed"))
                    yield "bye\n"
                    await out.wait_for(lambda line: line == "bye")

                options = ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION,
                                      interactive=True)
                code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == [f"* Resumed session {old}.", "bye"]
