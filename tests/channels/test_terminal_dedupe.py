"""``tidings chat --local`` on a channel whose table (shared with ``tidings serve``) sets
``dedupe_message_ids = true``: the terminal numbered its lines ``1``, ``2``, ... from 1 in every
run, while the conversation is durable, so every line of a second run on the same database was
a ``duplicate`` of the first run's line of that number: nothing was done and nothing said."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import tidings
from tidings.channels import ChannelConfig
from tidings.channels._terminal import TerminalChannel


async def lines_of(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line + "\n"


async def test_a_second_run_on_the_same_database_is_answered(db_path, workspace) -> None:
    config = ChannelConfig("terminal", dedupe_message_ids=True)
    for word in ("first", "second"):
        out = io.StringIO()
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            channel = TerminalChannel(rt, config, out=out)
            await channel.chat(lines_of(word), one_at_a_time=True)
        assert f"terminal> {word}" in out.getvalue().splitlines(), out.getvalue()
