"""A chat id whose conversation key is over its cap (8192 characters) was refused naming
``conversation_key``, a field the adapter never gave (it gave ``chat_id``, ``thread_id`` or
``sender_id``; the key is built from them): the error now names the inbound field whose part
of the key is the longest, and ``handle_inbound``'s docstring lists it."""

from __future__ import annotations

import pytest

from tidings.channels import ChannelBase, ChannelConfig
from tidings.errors import ValidationError

from .conftest import RecordingChannel, rows


@pytest.mark.parametrize("text", ["hello", "/new"])
async def test_a_chat_id_too_long_for_a_key_is_refused_naming_chat_id(rt, db_path,
                                                                      text) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    with pytest.raises(ValidationError) as caught:
        await channel.say(text, chat_id="x" * 9000)
    assert caught.value.field == "chat_id"
    assert "8192" in caught.value.reason
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(0,)]


async def test_a_thread_id_too_long_for_a_key_is_refused_naming_thread_id(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    with pytest.raises(ValidationError) as caught:
        await channel.say("hello", chat_id="c1", thread_id="%" * 3000)
    assert caught.value.field == "thread_id"


def test_handle_inbound_documents_the_refusal() -> None:
    doc = ChannelBase.handle_inbound.__doc__ or ""
    assert "ValidationError" in doc
    assert "chat_id" in doc
