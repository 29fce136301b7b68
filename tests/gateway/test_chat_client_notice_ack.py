"""``tidings chat`` acks a ``notice`` answering a line of its own (a command answered with no
session names it: ``message_id``), and prints such an answer once: the gateway sends it again
to a resend of the line until it is acked, and an ack lost with a connection (the chat read
the notice, the connection dropped before the ack and the ``accepted`` got through) has the
reconnect's resend of the line bring it a second time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from tidings.channels import GatewayClient
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript

CLEARED = "Cleared. Your next message starts a new session."


class _Deafened:
    """A ``GatewayClient`` that, at the first direct ``/clear`` notice, returns it and then
    hears nothing more on that connection, which is killed: the chat's ack of it, and the
    line's ``accepted``, are lost with it."""

    def __init__(self, client: GatewayClient, owner: _Client) -> None:
        self._client = client
        self._owner = owner
        self._deaf = False

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def ack_notices(self, *message_ids: str) -> None:
        self._owner.acks.append([*message_ids, *(["(lost)"] if self._deaf else [])])
        if self._deaf:  # lost with the connection
            await trio.lowlevel.checkpoint()
            return
        await self._client.ack_notices(*message_ids)

    async def receive(self) -> dict[str, Any]:
        while self._deaf:  # what the dying connection still brings is lost, to its close
            await self._client.receive()
        frame = await self._client.receive()
        if (frame.get("type") == "notice" and frame.get("command") == "clear"
                and not self._owner.dropped):
            self._owner.dropped = self._deaf = True
            [conn] = self._owner.gateway.hubs[
                self._owner.gateway.conversation_named("acks").key].connections
            conn.kill(4009, "too slow")
        return frame


class _Client:
    def __init__(self, gateway: Any) -> None:
        self.gateway = gateway
        self.dropped = False
        self.acks: list[list[str]] = []

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with GatewayClient.connect(*args, **kwargs) as client:
            yield _Deafened(client, self)


async def test_a_notice_read_before_its_ack_was_lost_is_printed_once_and_acked(
        rt, serve_gateway, monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (gateway, url):
        client = _Client(gateway)
        monkeypatch.setattr(_chat_ws, "GatewayClient", client)

        async def lines() -> AsyncIterator[str]:
            yield "/clear\n"  # in the session: a notice delivery
            yield "/clear\n"  # no session: a direct notice, read, its ack lost
            yield "/status\n"

        options = ChatOptions(url=url, token="gateway-test-token", conversation="acks",
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
        owed = gateway.owed_answers.of(gateway.conversation_named("acks").key)
        left = len(gateway.owed_answers)
    assert code == 0, err.getvalue()
    shown = out.getvalue().splitlines()
    assert shown.count(f"* {CLEARED}") == 2, shown
    assert [line for line in shown if line.startswith("* ")][-1].startswith("* Session:"), shown
    [[lost, said_lost], [acked]] = client.acks  # the first lost, the repeat's acked
    assert (lost, said_lost) == (acked, "(lost)")
    assert (owed, left) == ([], 0)
