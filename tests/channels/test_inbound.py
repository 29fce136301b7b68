"""Inbound messages and the conversation key their session is bound under."""

from __future__ import annotations

import attrs
import pytest

from tidings.channels import ChannelConfig, Inbound, inbound_conversation_key
from tidings.errors import ValidationError


def test_ids_are_strings_and_blank_optionals_are_missing() -> None:
    inbound = Inbound(chat_id=-100123, sender_id=42, text="hi", message_id=7, thread_id="")
    assert inbound == Inbound(chat_id="-100123", sender_id="42", text="hi", message_id="7")
    assert inbound.thread_id is None
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        inbound.text = "other"  # type: ignore[misc]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"chat_id": "", "sender_id": "u", "text": "x"}, "chat_id"),
    ({"chat_id": None, "sender_id": "u", "text": "x"}, "chat_id"),
    ({"chat_id": "c", "sender_id": "", "text": "x"}, "sender_id"),
    ({"chat_id": "c", "sender_id": True, "text": "x"}, "sender_id"),
    ({"chat_id": "c", "sender_id": "u", "text": None}, "text"),
    ({"chat_id": "c", "sender_id": "u", "text": b"x"}, "text"),
])
def test_bad_inbound_fields_are_named(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        Inbound(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_chat_scope_keys_by_chat_and_thread() -> None:
    config = ChannelConfig(name="ops")
    assert inbound_conversation_key(config, Inbound("c1", "u1", "hi")) == "ops:chat:c1"
    assert inbound_conversation_key(config, Inbound("c1", "u2", "hi")) == "ops:chat:c1"
    assert (inbound_conversation_key(config, Inbound("!r:x", "u1", "hi", thread_id="t 1"))
            == "ops:chat:%21r%3Ax:thread:t%201")


def test_sender_scope_keys_by_chat_and_sender() -> None:
    config = ChannelConfig(name="ops", session_scope="sender")
    assert inbound_conversation_key(config, Inbound("c1", "u1", "hi")) == "ops:sender:c1:u1"
    assert (inbound_conversation_key(config, Inbound("c1", "u2", "hi", thread_id="t"))
            == "ops:sender:c1:u2")
