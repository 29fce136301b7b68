"""``tidings chat --url`` reconnects "without missing or repeating anything" (README), and a
reply still waiting to be delivered when it starts "comes all the same". Its first welcome's
``last_seq`` counts as seen (its history is not shown), so the reconnect's hello says
``after_seq`` = that ``last_seq``: rows up to it still ``sending`` or ``unknown`` become
``sent`` before ``welcome``. A row that was waiting for a client when the chat began, handed
to its first connection, which dropped before the chat read it (``unknown`` at the leave), is
so confirmed and never shown. (280b943 shows such rows only while they were still ``queued``.)
The welcome now says ``history_seq``, below the first row still waiting for a client: the
chat counts as seen only the rows up to it, and the lost row is replayed.

A real gateway (real time, as test_chat_client_history_kept_out.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .chat_doubles import ClientWrapper, WrappingConnector
from .conftest import TOKEN, Transcript

CONVERSATION = "pending"


class _LosesFirstDelivery(ClientWrapper):
    """On the first connection, the first delivery is lost with the connection: the server
    closes it (4009) and the chat reads nothing more of it."""

    async def receive(self) -> dict[str, Any]:
        owner = self._owner
        frame = await self._client.receive()
        if owner.connects == 1 and frame.get("type") == "delivery":
            gateway = owner.gateway
            hub = gateway.hubs[gateway.conversation_named(CONVERSATION).key]
            for conn in hub.connections:
                conn.kill(4009, "too slow")
            while True:  # what was on the way is lost too, up to the close (GatewayClosed)
                await self._client.receive()
        return frame


class _Connector(WrappingConnector):
    wrapper = _LosesFirstDelivery

    def __init__(self, gateway: Any) -> None:
        self.gateway = gateway
        self.connects = 0
        self.welcomed = trio.Event()

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.connects += 1
        async with super().connect(*args, **kwargs) as client:
            if self.connects > 1:
                self.welcomed.set()
            yield client


async def test_a_waiting_row_lost_with_the_first_connection_is_shown_after_the_reconnect(
        rt, serve_gateway, connect, monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (gateway, url):
        connector = _Connector(gateway)
        monkeypatch.setattr(_chat_ws, "GatewayClient", connector)
        with trio.fail_after(20):  # real time
            async with connect(url, CONVERSATION) as before:
                session_id = before.session_id
            await rt.notify(session_id, "waiting for you")  # nobody connected: it waits

        async def lines() -> Any:
            await connector.welcomed.wait()
            yield "bye\n"

        options = ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION,
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert "* waiting for you" in out.getvalue().splitlines(), (out.getvalue(),
                                                                err.getvalue())
