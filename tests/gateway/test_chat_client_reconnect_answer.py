"""The terminal client (tidings chat without --local): a line typed while the connection is
down, with a question open, answers that question once the server asks it again after the
reconnect. Before, the line was read as soon as the new connection was welcomed, before the
server's question came again (the client had forgotten the old one, which may have closed
meanwhile), and so went as a message: it steered (cancelled) the very turn that asked, and
the question was printed again for nobody."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from tidings.channels import GatewayClient, GatewayClosed
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Asker, GatedClient, Transcript


async def test_an_answer_typed_while_away_answers_the_question_still_open(
        rt, serve_gateway, monkeypatch) -> None:
    # Typed into a terminal (a piped chat waits for the question itself before it reads on).
    gated = GatedClient()
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    monkeypatch.setattr(_chat_ws, "GatewayClient", gated)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=Asker()) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "ask:your name?\n"
            await out.wait_for(lambda line: line == "? your name?")
            [conn] = gateway.hubs[gateway.conversation_named("away").key].connections
            conn.kill(4009, "too slow")
            await err.wait_for(lambda line: line.endswith("reconnecting"))
            gated.back.set()
            yield "Ada\n"  # typed while away: waiting for the chat when it is welcomed again
            await out.wait_for(lambda line: line in ("answer: Ada", "Ada"))

        options = ChatOptions(url=url, token="gateway-test-token", conversation="away",
                              interactive=True)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    # asked, asked again by the new connection, answered: no steer, no second turn
    assert out.getvalue().splitlines() == ["? your name?", "? your name?", "answer: Ada"]


class DropOnSync(GatewayClient):
    """A connection that drops as the chat asks it to ``sync``."""

    async def sync(self, session_id: str | None = None) -> None:
        await self.ws.aclose(1011, "internal error")
        raise GatewayClosed(1011, "internal error")


class DroppedOnce(GatedClient):
    """The first reconnect (held until ``back``) drops at its first ``sync``."""

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[GatewayClient]:
        self.connects += 1
        if self.connects > 1:
            await self.back.wait()
        kind = DropOnSync if self.connects == 2 else GatewayClient
        async with kind.connect(*args, **kwargs) as client:
            yield client


async def test_a_reconnect_that_drops_before_it_knows_still_waits_for_the_question(
        rt, serve_gateway, monkeypatch) -> None:
    gated = DroppedOnce()
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    monkeypatch.setattr(_chat_ws, "GatewayClient", gated)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=Asker()) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "ask:your name?\n"
            await out.wait_for(lambda line: line == "? your name?")
            [conn] = gateway.hubs[gateway.conversation_named("twice").key].connections
            conn.kill(4009, "too slow")
            await err.wait_for(lambda line: line.endswith("reconnecting"))
            gated.back.set()
            yield "Ada\n"
            await out.wait_for(lambda line: line in ("answer: Ada", "Ada"))

        options = ChatOptions(url=url, token="gateway-test-token", conversation="twice",
                              interactive=True)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert gated.connects == 3
    assert out.getvalue().splitlines()[-1] == "answer: Ada"
    assert "(cancelled: steer)" not in out.getvalue().splitlines()
