"""The terminal client (tidings chat without --local) gives a kept answer again only to the
question it answered: a later, different question that reuses the id (a host asking with ids
of its own: the gateway takes an id again once its question closed) is shown to the person.
Before, an answer whose ``prompt_closed`` a drop took was given, unseen, to any later question
with that id."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import trio
from trio_websocket import ConnectionClosed, WebSocketRequest, serve_websocket

from tidings.channels._gateway_frames import PROTOCOL_VERSION
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript


class _Asking:
    """A gateway stand-in: each connection is welcomed and asked ``questions[n]`` (prompt id
    ``p`` every time); the first answer is recorded, then the first connection is dropped
    (1011) before any ``prompt_closed``, the later ones kept until the client leaves."""

    def __init__(self, questions: list[str]) -> None:
        self.questions = questions
        self.answers: list[dict[str, Any]] = []
        self.answered = trio.Event()
        self.connections = 0

    async def handle(self, request: WebSocketRequest) -> None:
        ws = await request.accept()
        index = self.connections
        self.connections += 1
        try:
            await ws.get_message()  # the hello
            await ws.send_message(json.dumps({"type": "welcome", "protocol": PROTOCOL_VERSION,
                                              "session_id": "s", "last_seq": 0}))
            await ws.send_message(json.dumps({
                "type": "prompt", "prompt_id": "p", "session_id": "s",
                "text": self.questions[index], "expires_at": 1000.0 + index}))
            while True:
                frame = json.loads(await ws.get_message())
                if frame.get("type") == "answer":
                    self.answers.append(frame)
                    self.answered.set()
                    self.answered = trio.Event()
                    if index == 0:
                        await ws.aclose(1011)
                        return
        except ConnectionClosed:
            return


async def test_a_kept_answer_is_not_given_to_another_question_with_the_same_id(
        monkeypatch) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    server = _Asking(["first?", "second?"])
    out, err = Transcript(), Transcript()

    async def lines() -> AsyncIterator[str]:
        await out.wait_for(lambda line: line == "? first?")
        yield "A\n"
        await out.wait_for(lambda line: line == "? second?")  # asked, not answered for us
        yield "B\n"
        while len(server.answers) < 2:
            await server.answered.wait()

    async with trio.open_nursery() as nursery:
        listener = await nursery.start(serve_websocket, server.handle, "127.0.0.1", 0, None)
        options = ChatOptions(url=f"ws://127.0.0.1:{listener.port}",
                              token="gateway-test-token", conversation="reused",
                              interactive=True)
        code = None  # the chat did not end within the bound
        with trio.move_on_after(10):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
        nursery.cancel_scope.cancel()
    assert [answer["text"] for answer in server.answers] == ["A", "B"], err.getvalue()
    assert out.getvalue().splitlines() == ["? first?", "? second?"]
    assert code == 0, err.getvalue()
