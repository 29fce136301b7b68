"""Piped (``one_at_a_time``), the terminal channel prints a turn's end (``[completed]``,
``[cancelled: ...]``, ``[failed: ...]``) after the turn's replies, so the same input gives the
same transcript, as ``tidings chat --local`` promises. Before, the lifecycle event was printed
as it came and the reply when its delivery came through the outbox, in either order: six runs
of the same seven lines gave six different transcripts."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

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
