"""The terminal client (tidings chat without --local) when the connection drops as it sends the
answer to a prompt or an approval request: the gateway still waits for that answer (it asks
every connection that comes, the reconnected one too), and the client answers it again with
what the user typed. Before, the answer was lost: the question came back and took the next line
(piped: a line meant as a message, or none at the end of input, the turn then waiting for the
whole prompt_timeout before it got 'expired'), or asked the person a second time."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tidings.channels import GatewayClient, GatewayClosed
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript

PROMPT = "? name?"
APPROVAL = '? approve deploy {"why": "test"} [y/N]'


class Questioner:
    """``ask:Q`` prompts Q and replies ``answer: A``; ``approve:A`` asks to approve A and
    replies with the decision; anything else is echoed."""

    async def run(self, turn: Any) -> None:
        if turn.text.startswith("ask:"):
            answer = await turn.prompt_user(turn.text[4:], timeout=60)
            await turn.send_chunk(f"answer: {answer}")
        elif turn.text.startswith("approve:"):
            decision = await turn.request_approval(turn.text[8:], details={"why": "test"},
                                                   timeout=60)
            await turn.send_chunk(f"allowed={decision.allowed} reason={decision.reason}")
        else:
            await turn.send_chunk(turn.text)


class _Dropping:
    """A ``GatewayClient`` whose first answer frame meets a drop: not sent (``lost``), not sent
    and the send raises (``raised``), or sent just before the connection is killed
    (``sent``: the server may have applied it, its ``prompt_closed`` lost)."""

    def __init__(self, client: GatewayClient, owner: AnswerDropping) -> None:
        self._client = client
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def send(self, frame: dict[str, Any]) -> None:
        owner = self._owner
        if frame.get("type") in ("answer", "approval"):
            owner.answers.append(frame)
            if not owner.dropped:
                owner.dropped = True
                if owner.how == "sent":
                    await self._client.send(frame)
                [conn] = owner.gateway.hubs[owner.gateway.conversation_named("q").key] \
                    .connections
                conn.kill(4009, "too slow")
                if owner.how == "raised":
                    raise GatewayClosed(1006, "dropped as the answer was sent")
                return
        await self._client.send(frame)


class AnswerDropping:
    def __init__(self, gateway: Any, how: str) -> None:
        self.gateway, self.how = gateway, how
        self.dropped = False
        self.answers: list[dict[str, Any]] = []

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with GatewayClient.connect(*args, **kwargs) as client:
            yield _Dropping(client, self)


CASES = pytest.mark.parametrize(("ask", "question", "reply", "answer"), [
    ("ask:name?", PROMPT, "answer: Ada", "Ada"),
    ("approve:deploy", APPROVAL, "allowed=True reason=None", "y"),
], ids=["prompt", "approval"])


@CASES
# Not "sent": the server may have applied that answer before the drop, and the turn then ends
# with a "completed" nobody hears (piped mode waits _SETTLE for it: see test_chat_client_resend).
@pytest.mark.parametrize("how", ["lost", "raised"])
async def test_an_answer_cut_by_a_drop_is_given_again_after_the_reconnect_piped(
        rt, serve_gateway, monkeypatch, how: str, ask: str, question: str, reply: str,
        answer: str) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=Questioner()) as (gateway, url):
        dropping = AnswerDropping(gateway, how)
        monkeypatch.setattr(_chat_ws, "GatewayClient", dropping)

        async def lines() -> AsyncIterator[str]:
            yield f"{ask}\n"
            yield f"{answer}\n"  # and the input ends

        options = ChatOptions(url=url, token="gateway-test-token", conversation="q",
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert "reconnecting" in err.getvalue()
    assert out.getvalue().splitlines() == [question, reply]
    assert dropping.answers[0] in dropping.answers[1:]  # the same frame, given again


@CASES
@pytest.mark.parametrize("how", ["lost", "raised", "sent"])
async def test_an_answer_cut_by_a_drop_is_given_again_after_the_reconnect_interactive(
        rt, serve_gateway, monkeypatch, how: str, ask: str, question: str, reply: str,
        answer: str) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=Questioner()) as (gateway, url):
        monkeypatch.setattr(_chat_ws, "GatewayClient", AnswerDropping(gateway, how))

        async def lines() -> AsyncIterator[str]:
            yield f"{ask}\n"
            await out.wait_for(lambda line: line == question)
            yield f"{answer}\n"
            await out.wait_for(lambda line: line == reply)  # never asked again
            yield "bye\n"  # a message, not an answer
            await out.wait_for(lambda line: line == "bye")

        options = ChatOptions(url=url, token="gateway-test-token", conversation="q",
                              interactive=True)
        with trio.fail_after(10):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert "reconnecting" in err.getvalue()
    assert out.getvalue().splitlines() == [question, reply, "bye"]
