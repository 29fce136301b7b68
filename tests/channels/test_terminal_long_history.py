"""The terminal channel's wait for deliveries (:meth:`TerminalChannel.wait_delivered`, after
each piped line of ``tidings chat --local`` and at the end of input) counts the rows still on
their way, not reading the session's history. Before, each look (every 50 ms while a reply
was on its way) read every delivery the session ever had: a local conversation, continued run
after run on the same database, got slower with each line (a quarter of a second a look at
30,000 rows)."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import pytest

from tidings.channels import ChannelConfig
from tidings.channels._terminal import TerminalChannel

_HISTORY = 300


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line + "\n"


async def test_the_wait_for_deliveries_does_not_read_the_sessions_history(
        rt, monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), out=out)
    await channel.chat(_lines("first"), one_at_a_time=True)
    [session_id] = channel.directory.sessions()
    async with rt.open_turn(session_id) as ctx:  # a long history, delivered and sent
        for n in range(_HISTORY):
            await ctx.output.send_text(f"old {n}")
    await channel.wait_delivered()
    assert len(await rt.deliveries(session_id=session_id, status="sent")) > _HISTORY

    read: list[int] = []
    deliveries = rt.deliveries

    async def counted(*args, **kwargs):  # type: ignore[no-untyped-def]
        rows = await deliveries(*args, **kwargs)
        read.append(len(rows))
        return rows

    monkeypatch.setattr(rt, "deliveries", counted)
    await channel.chat(_lines("next"), one_at_a_time=True)
    assert "terminal> next" in out.getvalue()
    assert all(rows < 10 for rows in read), read  # no look read the history
