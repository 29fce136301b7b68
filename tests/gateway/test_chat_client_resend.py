"""The terminal client (tidings chat without --local) when the connection drops as a line is
sent: the line is sent again after the reconnect, with the same message id (the gateway answers
a resend it already holds ``duplicate``), never lost and never a second turn."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from tidings.channels import GatewayClient, GatewayClosed
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript


class _Dropping:
    """A ``GatewayClient`` whose first ``message`` frame with text *text* meets the drop: the
    server side is killed and the frame either raises (``raised``: the send saw the close), goes
    nowhere (``lost``: written, never read) or is sent (``sent``: the server may have taken it,
    its ``accepted`` lost with the connection) or is taken (``taken``: the server ran its turn
    to the end while the client heard nothing of it, then the connection drops)."""

    def __init__(self, client: GatewayClient, owner: DroppingClient) -> None:
        self._client = client
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def send(self, frame: dict[str, Any]) -> None:
        owner = self._owner
        if frame.get("type") == "message" and frame.get("text") == owner.text \
                and not owner.dropped:
            owner.dropped = True
            owner.ids.append(frame["id"])
            if owner.how in ("sent", "taken"):
                await self._client.send(frame)
            if owner.how == "taken":
                owner.deaf_for = frame["id"]
                return
            [conn] = owner.gateway.hubs[owner.gateway.conversation_named("resend").key] \
                .connections
            conn.kill(4009, "too slow")
            if owner.how == "raised":
                raise GatewayClosed(1006, "dropped as the line was sent")
            return
        if frame.get("type") == "message":
            owner.ids.append(frame["id"])
        await self._client.send(frame)

    async def receive(self) -> dict[str, Any]:
        owner = self._owner
        while True:
            frame = await self._client.receive()
            if owner.deaf_for is None:
                return frame
            # heard by nobody (a delivery not acked either: replayed after the reconnect)
            if frame.get("type") == "lifecycle" and frame.get("event") == "completed" \
                    and frame.get("message_id") == owner.deaf_for:
                owner.deaf_for = None
                [conn] = owner.gateway.hubs[owner.gateway.conversation_named("resend").key] \
                    .connections
                conn.kill(4009, "too slow")


class DroppingClient:
    def __init__(self, gateway: Any, text: str, how: str) -> None:
        self.gateway, self.text, self.how = gateway, text, how
        self.dropped = False
        self.deaf_for: str | None = None
        self.ids: list[str] = []

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with GatewayClient.connect(*args, **kwargs) as client:
            yield _Dropping(client, self)


@pytest.mark.parametrize("how", ["raised", "lost", "sent", "taken"])
@pytest.mark.parametrize("interactive", [True, False])
async def test_a_line_sent_as_the_connection_drops_is_sent_again_after_the_reconnect(
        rt, serve_gateway, monkeypatch, how: str, interactive: bool) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (gateway, url):
        dropping = DroppingClient(gateway, "two", how)
        monkeypatch.setattr(_chat_ws, "GatewayClient", dropping)

        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            await out.wait_for(lambda line: line == "one")
            yield "two\n"
            await err.wait_for(lambda line: line.endswith("reconnecting"))
            await out.wait_for(lambda line: line == "two")
            yield "three\n"
            await out.wait_for(lambda line: line == "three")

        options = ChatOptions(url=url, token="gateway-test-token", conversation="resend",
                              interactive=interactive)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == ["one", "two", "three"]
    two = [i for i, message_id in enumerate(dropping.ids) if message_id == dropping.ids[1]]
    assert len(two) == 2, dropping.ids  # "two" sent again, under its first id


class _Slow:
    """``slow`` replies ``late`` once ``release`` is set."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.release = trio.Event()

    async def run(self, turn: Any) -> None:
        self.started.set()
        await self.release.wait()
        await turn.send_chunk("late")


class _Counting:
    """``GatewayClient`` that says when its second connection was welcomed."""

    def __init__(self) -> None:
        self.connects = 0
        self.back = trio.Event()

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[GatewayClient]:
        async with GatewayClient.connect(*args, **kwargs) as client:
            self.connects += 1
            if self.connects == 2:
                self.back.set()
            yield client


async def test_piped_input_that_ended_still_waits_for_the_answer_across_a_reconnect(
        rt, serve_gateway, monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    counting = _Counting()
    monkeypatch.setattr(_chat_ws, "GatewayClient", counting)
    out, err = Transcript(), Transcript()
    agent = _Slow()
    async with serve_gateway(rt, agent=agent) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "slow\n"  # and the input ends while its turn runs

        async def drop_then_release() -> None:
            await agent.started.wait()
            [conn] = gateway.hubs[gateway.conversation_named("ended").key].connections
            conn.kill(4009, "too slow")
            await counting.back.wait()
            await trio.testing.wait_all_tasks_blocked()
            agent.release.set()

        options = ChatOptions(url=url, token="gateway-test-token", conversation="ended",
                              interactive=False)
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drop_then_release)
                code = await chat_over_websocket(options, lines(), out=out, err=err)
                nursery.cancel_scope.cancel()
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == ["late"]


async def test_a_line_refused_as_the_server_stops_is_sent_again_once_it_is_back(
        rt, serve_gateway, monkeypatch, autojump_clock) -> None:
    # The gateway refuses a message while it stops (shutting_down: 'send it again later'),
    # then closes the connection 1001. The chat took the refusal for an answer: the line was
    # never sent again, though the chat reconnects by itself to the server once it is back
    # (lost, a piped script's line too), or the person typed it again.
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            await out.wait_for(lambda line: line == "one")
            gateway.accepting = False  # the server stops: messages refused
            yield "two\n"
            await out.wait_for(lambda line: line.startswith("! shutting_down"))
            gateway.accepting = True  # ... and it is back: the connection drops, 1001
            [conn] = gateway.hubs[gateway.conversation_named("stop").key].connections
            conn.kill(1001, "server shutting down")

        options = ChatOptions(url=url, token="gateway-test-token", conversation="stop",
                              interactive=False)
        with trio.fail_after(60):  # hang guard
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    shown = out.getvalue().splitlines()
    assert shown[0] == "one", shown
    assert shown[1].startswith("! shutting_down"), shown
    assert shown[2:] == ["two"], shown
