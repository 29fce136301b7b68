"""The terminal channel's questions: one that ended unanswered does not take the next line."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import trio

from tidings.channels import ChannelConfig
from tidings.channels._terminal import TerminalChannel


class AskOnce:
    """``ask`` prompts with a short timeout and reports the answer; anything else echoes."""

    def __init__(self) -> None:
        self.replied = trio.Event()

    async def run(self, turn) -> None:
        if turn.text == "ask":
            answer = await turn.prompt_user("Which branch?", timeout=5)
            await turn.send_chunk(f"answer={answer}")
            self.replied.set()
        else:
            await turn.send_chunk(f"echo {turn.text}")


async def test_a_question_that_expired_does_not_swallow_the_next_line(
        rt, autojump_clock) -> None:
    out = io.StringIO()
    agent = AskOnce()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), agent=agent, out=out)

    async def lines() -> AsyncIterator[str]:
        yield "ask\n"
        await agent.replied.wait()  # the question expired unanswered: the turn went on
        yield "hello\n"

    with trio.fail_after(60):
        await channel.chat(lines())
    text = out.getvalue()
    assert "terminal> answer=None" in text
    assert "terminal> echo hello" in text  # a message, not the answer to a dead question
