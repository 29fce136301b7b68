"""A ``TerminalChannel`` refused as it is built (a ``chat_id`` whose conversation key is over
the cap) does not hold its name: the corrected one that follows is taken.

A runtime has one open channel of a name (README). The key check ran after the base class had
claimed the name for the channel being built; refused, that half-built channel kept the name
for as long as it lived (its exception's traceback holds it, and it is in a reference cycle
besides), so the corrected retry was refused too, naming ``name``, not what was wrong."""

from __future__ import annotations

import io

import pytest

from tidings.actors._conversations import MAX_CONVERSATION_KEY_CHARS
from tidings.channels import ChannelConfig
from tidings.channels._terminal import TerminalChannel
from tidings.errors import ValidationError

from .test_terminal import lines_of


async def test_a_terminal_refused_for_its_chat_id_leaves_its_name_free(rt) -> None:
    with pytest.raises(ValidationError) as caught:
        TerminalChannel(rt, ChannelConfig(name="terminal"), out=io.StringIO(),
                        chat_id="x" * MAX_CONVERSATION_KEY_CHARS)
    assert caught.value.field == "chat_id"
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), out=out, chat_id="x")
    await channel.chat(lines_of("hello"), one_at_a_time=True)
    assert "terminal> hello" in out.getvalue().splitlines()
