"""``tidings chat --url`` shows no history (README), and follows the session the server makes
current. After a reconnect its hello has ``after_seq``, so the gateway writes a session's rows
from its start before the first of them that reaches the connection live (03a6e6d): a late
reply in a session another device's ``/new`` left before the chat began brings that session's
whole history, which the chat never saw (45f7435 / 280b943 count as printed only the rows it
has seen). It printed that history in the middle of the chat, as if new; and the old ``/new``
answer in it (``command: "new"``) made the chat follow the left session: its next hello named
that one, not the conversation's current session. The gateway now marks a catch-up's frames
(``"catch_up": true``): the chat shows none of a session it had seen nothing of, and follows
no caught-up row.

A real gateway on the mock clock; the agent's ``slow`` turn waits for the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from ..real_time import fail_after_real
from .chat_doubles import HeldAgent, WrappingConnector
from .conftest import TOKEN, Transcript

CONVERSATION = "history"


class _Recording(WrappingConnector):
    """Notes each hello the chat says (the keyword arguments of its connect)."""

    def __init__(self) -> None:
        self.hellos: list[dict[str, Any]] = []

    def connect(self, *args: Any, **kwargs: Any) -> Any:
        self.hellos.append(kwargs)
        return super().connect(*args, **kwargs)


def _drop_the_chat(gateway: Any) -> None:
    hub = gateway.hubs[gateway.conversation_named(CONVERSATION).key]
    [conn] = [conn for conn in hub.connections if conn.client == "tidings-chat"]
    conn.kill(4009, "too slow")


async def test_a_late_reply_after_a_reconnect_brings_no_history_and_no_switch(
        rt, serve_gateway, connect, is_frame, monkeypatch, autojump_clock) -> None:
    agent = HeldAgent("slow")
    recording = _Recording()
    monkeypatch.setattr(_chat_ws, "GatewayClient", recording)
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    with fail_after_real(30):
        async with serve_gateway(rt, agent=agent) as (gateway, url), \
                connect(url, CONVERSATION) as other:
            await other.message("/new", message_id="o1")  # the session the turn runs in
            await other.receive_until(is_frame("delivery", command="new"))
            slow = await other.message("slow", message_id="o2")
            await other.receive_until(is_frame("lifecycle", event="started", message_id=slow))
            await other.message("/new", message_id="o3")  # left, its turn running on
            [*_, answer] = await other.receive_until(is_frame("delivery", command="new"))
            current = answer["session_id"]

            async def lines() -> AsyncIterator[str]:
                yield "one\n"
                await out.wait_for(lambda line: line == "one")
                _drop_the_chat(gateway)
                await err.wait_for(lambda line: line.endswith("reconnecting"))
                yield "two\n"  # sent on the connection after the reconnect
                await out.wait_for(lambda line: line == "two")
                agent.release.set()  # the late reply, in the session left before the chat
                await out.wait_for(lambda line: line == "slow")
                _drop_the_chat(gateway)
                await err.wait_for(lambda line: line.endswith("reconnecting"))
                yield "three\n"
                await out.wait_for(lambda line: line == "three")

            options = ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION,
                                  interactive=False)
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == ["one", "two", "slow", "three"]
    assert recording.hellos[-1].get("session_id") == current, recording.hellos
