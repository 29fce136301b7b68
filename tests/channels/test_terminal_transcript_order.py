"""Piped (``one_at_a_time``), the terminal channel prints a turn's end (``[completed]``,
``[cancelled: ...]``, ``[failed: ...]``) after the turn's replies, so the same input gives the
same transcript, as ``tidings chat --local`` promises. Before, the lifecycle event was printed
as it came and the reply when its delivery came through the outbox, in either order: six runs
of the same seven lines gave six different transcripts."""

from __future__ import annotations

import contextlib
import functools
import io
from collections.abc import AsyncIterator

import pytest
import trio.testing

from tidings.actors import Outbound
from tidings.channels import ChannelConfig
from tidings.channels._terminal import TerminalChannel


class SlowTerminal(TerminalChannel):
    """A terminal whose deliveries take a moment (a slow terminal, a busy machine): everything
    else runs first."""

    async def deliver(self, outbound: Outbound) -> None:
        await trio.testing.wait_all_tasks_blocked()
        await super().deliver(outbound)


class Failing:
    async def run(self, turn) -> None:
        if turn.text == "fail":
            await turn.output.send_text("about to fail")
            raise RuntimeError("boom")
        await turn.send_chunk(turn.text)


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line + "\n"


async def test_a_turns_end_is_printed_after_its_replies(rt) -> None:
    out = io.StringIO()
    channel = SlowTerminal(rt, ChannelConfig(name="terminal"), agent=Failing(), out=out)
    await channel.chat(_lines("one", "fail", "two"), one_at_a_time=True)
    assert out.getvalue().splitlines() == [
        "  [started]", "terminal> one", "  [completed]",
        "  [started]", "terminal> about to fail", "  [failed: RuntimeError: boom]",
        "  [started]", "terminal> two", "  [completed]"]


class StuckTerminal(TerminalChannel):
    """A terminal whose deliveries never get through (a terminal stopped with Ctrl-S, a
    reader that does not read): the chat waits for them, its turn's end held."""

    async def deliver(self, outbound: Outbound) -> None:
        await trio.sleep_forever()


# A chat that ended early (Ctrl-C, SIGTERM, the runtime's stop: an agent's KeyboardInterrupt)
# dropped the ends it held back for the replies: '[started]' was the last word on the turn,
# though it had completed (or failed, saying why the chat stopped).
# No grace: the runtime's stop would wait it out (real time) for the stuck delivery.
@pytest.mark.parametrize("rt_grace", [0.0])
async def test_a_turns_end_held_back_is_printed_when_the_chat_is_cancelled(rt) -> None:
    out = io.StringIO()
    channel = StuckTerminal(rt, ChannelConfig(name="terminal"), agent=Failing(), out=out)
    lines = _lines("one")
    with trio.CancelScope() as scope:
        async with contextlib.aclosing(lines), trio.open_nursery() as nursery:
            nursery.start_soon(functools.partial(channel.chat, lines, one_at_a_time=True))
            while "[started]" not in out.getvalue():
                await trio.testing.wait_all_tasks_blocked()
            await channel.wait_idle()  # the turn ended; its reply cannot be printed
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()
    assert out.getvalue().splitlines() == ["  [started]", "  [completed]"]
