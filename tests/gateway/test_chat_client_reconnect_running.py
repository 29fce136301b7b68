"""``tidings chat --url`` with piped input waits for each line's turn to end, also across a
reconnect, while that turn runs silent (no chunk, no frame while the chat was away).

Two ways it went wrong. A line whose ``accepted`` the drop cut is sent again with its id, and
the gateway answers it ``duplicate``: the chat took that for done and sent the next line at
once, which steered (cancelled) the turn still running, ``(cancelled: steer)``, its answer
lost. And a line whose ``accepted`` came before the drop: the new connection heard nothing of
its turn (its ``started`` went to the old one), so the chat waited 30 s and sent the next line
anyway, with the same result. The gateway now says which turns run: ``accepted`` of a duplicate
has ``running`` (its turn has not ended: it runs, or waits to), and ``welcome`` lists the
message ids of the turns running in the conversation.

A real gateway on the mock clock: the agent's ``slow`` turn waits for the test, which lets it
answer 100 s after the reconnect."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tidings.channels import GatewayClient
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from ..real_time import fail_after_real
from .chat_doubles import ClientWrapper, HeldAgent
from .conftest import Transcript

CONVERSATION = "silent"


class _Dropping(ClientWrapper):
    """A connection of :class:`DropOnAccepted`: the ``accepted`` of the first ``slow`` drops
    the connection (the server side is killed), heard by the chat or not (*hears*)."""

    async def send(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "message" and frame.get("text") == "slow":
            self._owner.slow_ids.append(frame["id"])
        await self._client.send(frame)

    async def receive(self) -> dict[str, Any]:
        owner = self._owner
        while True:
            frame = await self._client.receive()
            if owner.dropped or frame.get("type") != "accepted" \
                    or frame.get("id") not in owner.slow_ids:
                return frame
            owner.dropped = True
            hub = owner.gateway.hubs[owner.gateway.conversation_named(CONVERSATION).key]
            [conn] = hub.connections
            conn.kill(4009, "too slow")
            if owner.hears:
                return frame


class DropOnAccepted:
    """``GatewayClient`` whose first connection drops on the ``accepted`` of ``slow``; says
    when the next one is welcomed (:attr:`back`)."""

    def __init__(self, gateway: Any, hears: bool) -> None:
        self.gateway, self.hears = gateway, hears
        self.slow_ids: list[str] = []
        self.dropped = False
        self.connects = 0
        self.back = trio.Event()

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with GatewayClient.connect(*args, **kwargs) as client:
            self.connects += 1
            if self.connects == 2:
                self.back.set()
            yield _Dropping(client, self)


@pytest.mark.parametrize("hears", [False, True], ids=["accepted-lost", "accepted-heard"])
async def test_a_piped_line_waits_for_its_silent_turn_across_a_reconnect(
        rt, serve_gateway, monkeypatch, autojump_clock, hears: bool) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    agent = HeldAgent("slow", suffix=" done")
    async with serve_gateway(rt, agent=agent) as (gateway, url):
        dropping = DropOnAccepted(gateway, hears)
        monkeypatch.setattr(_chat_ws, "GatewayClient", dropping)

        async def lines() -> AsyncIterator[str]:
            yield "slow\n"
            yield "next\n"

        async def answer_late() -> None:
            await dropping.back.wait()
            await trio.sleep(100)  # silent: longer than the 30 s the chat waited
            agent.release.set()

        options = ChatOptions(url=url, token="gateway-test-token", conversation=CONVERSATION,
                              interactive=False)
        with fail_after_real(30):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(answer_late)
                code = await chat_over_websocket(options, lines(), out=out, err=err)
                nursery.cancel_scope.cancel()
    assert code == 0, err.getvalue()
    assert dropping.dropped, err.getvalue()
    assert dropping.connects == 2, err.getvalue()
    assert out.getvalue().splitlines() == ["slow done", "next"]  # not "(cancelled: steer)"
    # accepted-lost: sent again under its id (a duplicate), never run twice
    assert len(dropping.slow_ids) == (1 if hears else 2)
    assert len(set(dropping.slow_ids)) == 1
