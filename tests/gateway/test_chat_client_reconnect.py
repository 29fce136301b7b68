"""The terminal client (tidings chat without --local) across reconnects: a question that closed
while it was away does not take the next line, and a server that keeps dropping it right after
``welcome`` is not retried forever."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from typing import Any

import trio

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Asker, GatedClient, Transcript


async def test_a_dropped_connection_is_reconnected_and_the_chat_goes_on(
        rt, serve_gateway, monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            await out.wait_for(lambda line: line == "one")
            [conn] = gateway.hubs[gateway.conversation_named("drop").key].connections
            conn.kill(4009, "too slow")
            await err.wait_for(lambda line: line.endswith("reconnecting"))
            yield "two\n"

        options = ChatOptions(url=url, token="gateway-test-token", conversation="drop",
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert "(4009)" in err.getvalue()
    assert out.getvalue().splitlines() == ["one", "two"]


async def test_a_question_closed_while_disconnected_does_not_take_the_next_line(
        rt, serve_gateway, connect, monkeypatch) -> None:
    gated = GatedClient()
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    monkeypatch.setattr(_chat_ws, "GatewayClient", gated)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=Asker()) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "ask:your name?\n"
            await out.wait_for(lambda line: line == "? your name?")
            [conn] = gateway.hubs[gateway.conversation_named("away").key].connections
            conn.kill(4009, "too slow")  # this client is away (reconnecting, held at the gate)
            await err.wait_for(lambda line: line.endswith("reconnecting"))
            async with connect(url, "away") as other:  # another device answers meanwhile
                *_, prompt = await other.receive_until(
                    lambda frame: frame.get("type") == "prompt")
                await other.send({"type": "answer", "prompt_id": prompt["prompt_id"],
                                  "text": "Ada"})
                await other.receive_until(lambda frame: frame.get("text") == "answer: Ada")
            gated.back.set()
            await out.wait_for(lambda line: line == "answer: Ada")  # back, caught up
            yield "hello\n"  # a message: the question it saw closed while it was away
            await out.wait_for(lambda line: line == "hello" or line.startswith("!"))

        options = ChatOptions(url=url, token="gateway-test-token", conversation="away",
                              interactive=True)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    shown = out.getvalue().splitlines()
    # The question not asked again is said closed (before the line is read), and the replayed
    # reply comes whenever the replay sends it.
    assert shown[0] == "? your name?", shown
    assert shown[-1] == "hello", shown
    assert sorted(shown[1:-1]) == ["(question closed while reconnecting)", "answer: Ada"]


async def test_a_server_that_drops_every_connection_after_welcome_is_given_up(
        rt, serve_gateway, monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    from tidings.channels import _gateway

    replay = _gateway.replay

    async def replay_and_drop(gateway: Any, conn: Any, plan: Any) -> None:
        await replay(gateway, conn, plan)  # after welcome: closed at once
        conn.kill(1011, "internal error")

    monkeypatch.setattr(_gateway, "replay", replay_and_drop)
    async with serve_gateway(rt) as (_gateway_channel, url):
        err = Transcript()
        options = ChatOptions(url=url, token="gateway-test-token", conversation="flap",
                              interactive=False)

        async def never_ends() -> AsyncIterator[str]:
            await trio.sleep_forever()
            yield ""

        with trio.fail_after(20):
            code = await chat_over_websocket(options, never_ends(), out=io.StringIO(),
                                             err=err)
    assert code == 1
    assert err.getvalue().count("reconnecting") == _chat_ws._RECONNECTS
    assert f"gave up after {_chat_ws._RECONNECTS} reconnects" in err.getvalue()


class Slow:
    """``slow`` replies ``late`` once ``release`` is set; anything else is echoed."""

    def __init__(self) -> None:
        self.started = trio.Event()
        self.release = trio.Event()

    async def run(self, turn) -> None:
        if turn.text == "slow":
            self.started.set()
            await self.release.wait()
            await turn.send_chunk("late")
        else:
            await turn.send_chunk(turn.text)


async def test_a_reconnect_after_new_prints_no_delivery_twice(
        rt, serve_gateway, monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    agent = Slow()
    async with serve_gateway(rt, agent=agent) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "slow\n"
            await agent.started.wait()
            yield "/new\n"
            await out.wait_for(lambda line: line.startswith("* "))
            yield "hi\n"
            await out.wait_for(lambda line: line == "hi")
            agent.release.set()  # the old session's reply comes after the new one's
            await out.wait_for(lambda line: line == "late")
            [conn] = gateway.hubs[gateway.conversation_named("new").key].connections
            conn.kill(4009, "too slow")
            await err.wait_for(lambda line: line.endswith("reconnecting"))
            yield "bye\n"
            await out.wait_for(lambda line: line == "bye")

        options = ChatOptions(url=url, token="gateway-test-token", conversation="new",
                              interactive=True)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == ["* Started a new session.", "hi", "late", "bye"]
