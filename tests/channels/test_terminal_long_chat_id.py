"""A ``TerminalChannel`` whose ``chat_id`` (or, by sender, ``sender_id``) makes a conversation
key over ``MAX_CONVERSATION_KEY_CHARS`` is refused when it is built, naming the option: it was
built, and the chat then ended at its first line (every line of it makes that key)."""

from __future__ import annotations

import io

import pytest

from tidings.actors._conversations import MAX_CONVERSATION_KEY_CHARS
from tidings.channels import ChannelConfig
from tidings.channels._terminal import TerminalChannel
from tidings.errors import ValidationError

from .test_terminal import lines_of

PREFIX = len("terminal:chat:")


async def test_a_chat_id_whose_key_is_over_the_cap_is_refused_when_built(rt) -> None:
    with pytest.raises(ValidationError) as caught:
        TerminalChannel(rt, ChannelConfig(name="terminal"), out=io.StringIO(),
                        chat_id="x" * (MAX_CONVERSATION_KEY_CHARS - PREFIX + 1))
    assert caught.value.field == "chat_id"
    assert str(MAX_CONVERSATION_KEY_CHARS) in caught.value.reason


async def test_a_sender_id_is_named_when_its_part_of_a_by_sender_key_is_the_longest(rt) -> None:
    with pytest.raises(ValidationError) as caught:
        TerminalChannel(rt, ChannelConfig(name="terminal", session_scope="sender"),
                        out=io.StringIO(), sender_id="y" * MAX_CONVERSATION_KEY_CHARS)
    assert caught.value.field == "sender_id"


async def test_a_chat_id_whose_key_is_at_the_cap_chats(rt) -> None:
    out = io.StringIO()
    channel = TerminalChannel(rt, ChannelConfig(name="terminal"), out=out,
                              chat_id="x" * (MAX_CONVERSATION_KEY_CHARS - PREFIX))
    await channel.chat(lines_of("hello"), one_at_a_time=True)
    assert "terminal> hello" in out.getvalue().splitlines()
