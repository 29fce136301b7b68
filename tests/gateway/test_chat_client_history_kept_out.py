"""``tidings chat --url`` starts with no history: its first hello has no ``after_seq``, and the
session's rows from before it are never shown. After a reconnect (whose hello has
``after_seq``), the gateway writes a session's earlier rows, from its start, before the first
of its rows that reaches the connection live while it has none of that session (another
device's ``/resume``, a late reply in a session ``/new`` left). For the session the chat
started in, those are its history: the chat printed them, in the middle of the chat, as if
they were new.

A real gateway (real time: no mock clock here)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .chat_doubles import HeldBackConnector, WrappingConnector
from .conftest import TOKEN, Transcript

CONVERSATION = "history"


class _Slow:
    """``slow`` replies ``late`` once :attr:`release` is set; anything else is echoed."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.release = trio.Event()

    async def run(self, turn: Any) -> None:
        if turn.text == "slow":
            self.started.set()
            await self.release.wait()
            await turn.send_chunk("late")
        else:
            await turn.send_chunk(turn.text)


class _Connects(WrappingConnector):
    """Says when each connection is welcomed."""

    def __init__(self) -> None:
        self.welcomed = trio.Event()

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with super().connect(*args, **kwargs) as client:
            self.welcomed.set()
            self.welcomed = trio.Event()
            yield client


async def test_the_history_of_the_session_the_chat_began_in_is_not_shown_after_a_reconnect(
        rt, serve_gateway, connect, is_frame, monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    connects = _Connects()
    monkeypatch.setattr(_chat_ws, "GatewayClient", connects)
    agent = _Slow()
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=agent) as (gateway, url):
        with trio.fail_after(20):  # real time
            async with connect(url, CONVERSATION) as before:  # yesterday's chat
                await before.message("yesterday")
                [*_, reply] = await before.receive_until(is_frame("delivery", text="yesterday"))
                await before.ack(reply["delivery_id"])

        async def lines() -> AsyncIterator[str]:
            yield "slow\n"
            await agent.started.wait()
            yield "/new\n"  # "slow" runs on in the session the chat began in
            await out.wait_for(lambda line: line.startswith("* "))
            back = connects.welcomed
            [conn] = gateway.hubs[gateway.conversation_named(CONVERSATION).key].connections
            conn.kill(4009, "too slow")
            await back.wait()
            agent.release.set()  # its reply reaches the new connection live
            await out.wait_for(lambda line: line == "late")
            yield "bye\n"
            await out.wait_for(lambda line: line == "bye")

        options = ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION,
                              interactive=True)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == ["* Started a new session.", "late", "bye"]


async def test_a_row_still_queued_when_the_first_connection_dropped_is_shown(
        rt, serve_gateway, connect, monkeypatch) -> None:
    # Written while nobody was connected, the rows wait in the outbox: the first connection
    # is handed at most ack_window (32) of them, and the drop keeps the rest queued. The
    # reconnect's hello says it has the session up to the first welcome's last_seq, but the
    # queued ones come all the same, through the session's queue: not history, news.
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (gateway, url):
        # The first connection is closed by the server once welcomed, before the chat read
        # anything of it; the reconnect is not held back.
        drops = HeldBackConnector(gateway, CONVERSATION)
        drops.go.set()
        monkeypatch.setattr(_chat_ws, "GatewayClient", drops)
        with trio.fail_after(20):  # real time
            async with connect(url, CONVERSATION) as before:
                session_id = before.session_id
            for number in range(1, 41):
                await rt.notify(session_id, f"pending {number}")

        async def lines() -> AsyncIterator[str]:
            await drops.welcomed.wait()
            yield "bye\n"

        options = ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION,
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    shown = out.getvalue().splitlines()
    assert shown[-2:] == ["* pending 40", "bye"], shown
