"""An approval request is allowed by the same words in ``tidings chat --local`` as in
``tidings chat --url`` (and ``docs/chat.html``): ``y``, ``yes`` or ``allow``, in any case.
Before, the terminal channel took ``y`` and ``yes`` only, so ``allow``, which the websocket
client and the browser client take as allowing, denied the request in a local chat."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

import pytest

from tidings.channels import ChannelConfig
from tidings.channels._terminal import TerminalChannel


class Deploying:
    async def run(self, turn) -> None:
        decision = await turn.request_approval("deploy", details={"branch": "main"})
        await turn.send_chunk(f"allowed={decision.allowed}")


async def _lines(*lines: str) -> AsyncIterator[str]:
    for line in lines:
        yield line + "\n"


@pytest.mark.parametrize(("answer", "allowed"), [
    ("allow", True), ("ALLOW", True), (" Yes ", True), ("y", True),
    ("n", False), ("", False), ("allowed", False), ("/cancel", False)])
async def test_the_words_that_allow_are_the_websocket_clients(rt, answer, allowed) -> None:
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), agent=Deploying(), out=out)
    await channel.chat(_lines("ship it", answer), one_at_a_time=True)
    assert f"terminal> allowed={allowed}" in out.getvalue()
