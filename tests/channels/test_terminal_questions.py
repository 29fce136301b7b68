"""The terminal channel's questions: one that ended unanswered does not take the next line."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import trio

from tidings.channels import ChannelConfig, Inbound
from tidings.channels._terminal import TerminalChannel

from ..until import until


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
    # And the person was told, before the turn went on (as tidings chat --url says it): a
    # question still on the screen invited an answer that went out as a message.
    lines_out = text.splitlines()
    closed = lines_out.index("(question closed)")
    assert lines_out[closed - 1].endswith("? Which branch?")
    assert closed < lines_out.index("terminal> answer=None")


class AskForever:
    """``ask`` prompts (no timeout) and reports the answer; anything else echoes."""

    def __init__(self) -> None:
        self.asked = trio.Event()

    async def run(self, turn) -> None:
        if turn.text == "ask":
            self.asked.set()
            answer = await turn.prompt_user("Which branch?")
            await turn.send_chunk(f"answer={answer}")
        else:
            await turn.send_chunk(f"echo {turn.text}")


async def test_a_line_typed_in_the_tick_its_question_was_cancelled_is_a_message(
        rt, autojump_clock) -> None:
    """The asking turn is cancelled (a stop button: the same call as ``/cancel``) and the next
    line comes before the asking task has run again. Before, the dead question took the line
    as its answer, and the line was lost: neither answered nor sent."""
    out = io.StringIO()
    agent = AskForever()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), agent=agent, out=out)

    async def lines() -> AsyncIterator[str]:
        yield "ask\n"
        await agent.asked.wait()
        # The question is printed and registered in one step of the asker: once printed, it
        # waits for a line. (All tasks blocked is no such wait: asking writes through the
        # store, and a task waiting for its thread counts as blocked.)
        await until(lambda: "? Which branch?" in out.getvalue())
        conversation = channel.conversation_for(
            Inbound(chat_id=channel.chat_id, sender_id=channel.sender_id, text="ask"))
        assert channel.dispatch.cancel(conversation, "cancel_command") == 1
        yield "hello\n"  # no checkpoint since the cancel: the asker has not run

    with trio.fail_after(60):
        await channel.chat(lines())
    text = out.getvalue()
    assert "[cancelled: cancel_command]" in text
    assert "answer=" not in text
    assert "terminal> echo hello" in text  # a message, not the answer to a dead question


class AskLong:
    """``ask`` prompts (answer window 60 s) and reports the answer; anything else echoes."""

    async def run(self, turn) -> None:
        if turn.text == "ask":
            answer = await turn.prompt_user("Your name?", timeout=60)
            await turn.send_chunk(f"answer={answer}")
        else:
            await turn.send_chunk(f"echo {turn.text}")


async def test_a_second_chat_on_the_channel_answers_its_questions(rt, autojump_clock) -> None:
    # The end of the first chat's input was kept for good: every question asked in a second
    # chat() (a host that plays a script, then hands the channel a terminal) was answered None
    # at once, and the line typed to answer it went out as a message.
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), agent=AskLong(), out=out)

    async def lines(*texts: str) -> AsyncIterator[str]:
        for text in texts:
            yield f"{text}\n"

    with trio.fail_after(60):
        await channel.chat(lines("hello"), one_at_a_time=True)
        await channel.chat(lines("ask", "Ada"), one_at_a_time=True)
    text = out.getvalue()
    assert "terminal> answer=Ada" in text, text
    assert "terminal> echo Ada" not in text
