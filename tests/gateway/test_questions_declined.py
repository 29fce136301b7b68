"""A client may say "no answer" to a prompt: ``{"type": "answer", "prompt_id": P, "text": null}``
(``GatewayClient.answer(P, None)``). The agent's ``prompt_user`` then gets None at once, as
``--local``'s end of input gives it. Before, protocol 1 had no such frame (a null ``text`` was
refused ``missing_field``): a client whose person had nothing to say (a chat at its end of
input) could only leave the question open, and the agent waited out the whole timeout."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tidings.errors import ValidationError

from .conftest import frame_is


class Asker:
    """``ask:Q`` prompts Q (for 60 s) and replies ``answer: <answer>``."""

    async def run(self, turn: Any) -> None:
        answer = await turn.prompt_user(turn.text[4:], timeout=60)
        await turn.send_chunk(f"answer: {answer}")


async def _asked(client: Any) -> dict[str, Any]:
    await client.message("ask:name?")
    return (await client.receive_until(frame_is("prompt")))[-1]


@pytest.mark.parametrize("how", ["frame", "method"])
async def test_a_null_answer_gives_the_agent_none_at_once(rt, serve_gateway, connect,
                                                          how) -> None:
    async with serve_gateway(rt, agent=Asker()) as (_gateway, url), \
            connect(url, "declined") as client:
        with trio.fail_after(10):  # far less than the prompt's 60 s
            prompt = await _asked(client)
            if how == "frame":
                await client.send({"type": "answer", "prompt_id": prompt["prompt_id"],
                                   "text": None})
            else:
                await client.answer(prompt["prompt_id"], None)
            closed = (await client.receive_until(frame_is("prompt_closed")))[-1]
            reply = (await client.receive_until(frame_is("delivery")))[-1]
    assert closed["reason"] == "answered"
    assert reply["text"] == "answer: None"


async def test_a_declined_prompt_is_closed_for_later_answers(rt, serve_gateway,
                                                             connect) -> None:
    async with serve_gateway(rt, agent=Asker()) as (_gateway, url), \
            connect(url, "declined-twice") as client:
        with trio.fail_after(10):
            prompt = await _asked(client)
            await client.answer(prompt["prompt_id"], None)
            await client.receive_until(frame_is("prompt_closed"))
            await client.answer(prompt["prompt_id"], "too late")
            error = (await client.receive_until(frame_is("error")))[-1]
    assert error["code"] == "already_answered"


@pytest.mark.parametrize(("fields", "code"), [({}, "missing_field"),
                                              ({"text": 5}, "bad_field"),
                                              ({"text": False}, "bad_field")])
async def test_an_answer_without_text_or_null_is_refused_naming_text(
        rt, serve_gateway, connect, fields, code) -> None:
    async with serve_gateway(rt, agent=Asker()) as (_gateway, url), \
            connect(url, "declined-bad") as client:
        with trio.fail_after(10):
            prompt = await _asked(client)
            await client.send({"type": "answer", "prompt_id": prompt["prompt_id"], **fields})
            error = (await client.receive_until(frame_is("error")))[-1]
            await client.answer(prompt["prompt_id"], "still open")  # it was not applied
            reply = (await client.receive_until(frame_is("delivery")))[-1]
    assert (error["code"], error["field"]) == (code, "text")
    assert "null" in error["message"]  # says how to give no answer
    assert reply["text"] == "answer: still open"


@pytest.mark.parametrize(("prompt_id", "text", "field"), [("", "x", "prompt_id"),
                                                          (5, "x", "prompt_id"),
                                                          ("p", 5, "text")])
async def test_the_answer_method_refuses_bad_arguments_by_name(rt, serve_gateway, connect,
                                                               prompt_id, text, field) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "answer-args") as client:
        with pytest.raises(ValidationError) as caught:
            await client.answer(prompt_id, text)
    assert caught.value.field == field
