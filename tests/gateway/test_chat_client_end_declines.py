"""``tidings chat`` (--url) whose input ends with a question open gives it "no answer" (a
prompt's ``text`` null, an approval's ``deny``) before it exits, as ``--local`` declines at
its end of input: the agent's ``prompt_user`` gets None at once. Before, the chat exited
(typed: Ctrl-D) or gave up waiting (piped) with the question left open, and the agent waited
for its whole timeout, the reply to the last line never shown."""

from __future__ import annotations

import pathlib
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript


class Questioner:
    """``ask:Q`` prompts Q and replies ``answer: A``; ``approve:A`` asks to approve A and
    replies with the decision; ``twice`` asks two things one after the other; anything else
    is echoed. Each question waits 60 s: far longer than the test's guard."""

    async def run(self, turn: Any) -> None:
        if turn.text.startswith("ask:"):
            answer = await turn.prompt_user(turn.text[4:], timeout=60)
            await turn.send_chunk(f"answer: {answer}")
        elif turn.text.startswith("approve:"):
            decision = await turn.request_approval(turn.text[8:], timeout=60)
            await turn.send_chunk(f"allowed={decision.allowed} reason={decision.reason}")
        elif turn.text == "twice":
            first = await turn.prompt_user("first?", timeout=60)
            second = await turn.prompt_user("second?", timeout=60)
            await turn.send_chunk(f"first={first} second={second}")
        else:
            await turn.send_chunk(turn.text)


async def _chat(rt: Any, serve_gateway: Any, conversation: str, line: str, shown: str, *,
                interactive: bool) -> list[str]:
    """The lines the chat printed: *line* is sent, and the input ends once *shown* (the
    question) is printed."""
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, agent=Questioner()) as (_gateway, url):

        async def lines() -> AsyncIterator[str]:
            yield f"{line}\n"
            await out.wait_for(lambda printed: printed == shown)

        options = ChatOptions(url=url, token="gateway-test-token", conversation=conversation,
                              interactive=interactive)
        with trio.fail_after(20):  # hang guard (each question waits 60 s)
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    return out.getvalue().splitlines()


@pytest.mark.parametrize("interactive", [False, True])
async def test_an_open_prompt_is_declined_at_the_end_of_input(rt, serve_gateway,
                                                              interactive) -> None:
    printed = await _chat(rt, serve_gateway, "end-prompt", "ask:name?", "? name?",
                          interactive=interactive)
    assert printed == ["? name?", "answer: None"]


@pytest.mark.parametrize("interactive", [False, True])
async def test_an_open_approval_is_denied_at_the_end_of_input(rt, serve_gateway,
                                                              interactive) -> None:
    printed = await _chat(rt, serve_gateway, "end-approval", "approve:deploy",
                          "? approve deploy {} [y/N]", interactive=interactive)
    assert printed == ["? approve deploy {} [y/N]", "allowed=False reason=denied"]


async def test_a_question_asked_after_the_end_of_input_is_declined_too(rt,
                                                                       serve_gateway) -> None:
    # Piped: the chat waits for the turn of its last line; the question that turn asks once
    # the first was declined is declined as well (as --local declines what is asked later).
    printed = await _chat(rt, serve_gateway, "end-twice", "twice", "? first?",
                          interactive=False)
    assert printed == ["? first?", "? second?", "first=None second=None"]


async def test_tidings_chat_on_a_pipe_declines_what_is_open_as_its_input_ends(
        rt, serve_gateway, tmp_path: pathlib.Path) -> None:
    async with serve_gateway(rt, agent=Questioner()) as (_gateway, url):
        with trio.fail_after(30):  # the question waits 60 s
            result = await trio.run_process(
                [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--token",
                 "gateway-test-token", "--url", url, "--conversation", "end-pipe"],
                stdin=b"ask:name?\n", capture_stdout=True,
                capture_stderr=True, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().splitlines() == ["? name?", "answer: None"]
