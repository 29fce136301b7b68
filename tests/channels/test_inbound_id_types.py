"""An inbound message's ids, and a conversation key's, are text or numbers (``str()``-ed, as
platforms often send numbers). Anything else was ``str()``-ed too: an adapter that passed the
platform's chat object instead of its id (``Inbound(chat_id=update.chat, ...)``) got a key made
of that object's text, a new session whenever the object changed (its title, say) and, for
one whose text is the default repr, a new one for every message; a message id made so never
matched its retry. They are refused naming the field, as a bool or bytes is."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tidings.channels import AccessPolicy, Inbound, conversation_key
from tidings.errors import ConversationKeyError, ValidationError


class Chat:
    """A platform's chat object, as a client library hands it out."""

    def __init__(self, chat_id: int, title: str) -> None:
        self.id = chat_id
        self.title = title

    def __str__(self) -> str:
        return f"Chat(id={self.id}, title={self.title!r})"


NOT_IDS = [Chat(5, "ops"), {"id": 5}, [5], (5,), {5}, object()]


@pytest.mark.parametrize("field", ["chat_id", "sender_id", "message_id", "thread_id"])
@pytest.mark.parametrize("value", NOT_IDS, ids=lambda value: type(value).__name__)
def test_an_id_that_is_neither_text_nor_a_number_is_refused_by_name(field, value) -> None:
    fields = {"chat_id": "c1", "sender_id": "u1", "text": "hi", field: value}
    with pytest.raises(ValidationError) as info:
        Inbound(**fields)
    assert info.value.field == field
    assert type(value).__name__ in str(info.value)


@pytest.mark.parametrize("value", NOT_IDS, ids=lambda value: type(value).__name__)
def test_a_key_part_that_is_neither_text_nor_a_number_is_refused_by_name(value) -> None:
    with pytest.raises(ConversationKeyError) as info:
        conversation_key("tg", "dm", "c1", value)
    assert info.value.field == "ids[1]"
    with pytest.raises(ConversationKeyError) as info:
        conversation_key("tg", "dm", "c1", thread=value)
    assert info.value.field == "thread"


def test_text_and_numbers_are_still_ids() -> None:
    inbound = Inbound(chat_id=-100123, sender_id=Decimal(42), text="hi", message_id=7.5,
                      thread_id="t1")
    assert (inbound.chat_id, inbound.sender_id, inbound.message_id, inbound.thread_id) == (
        "-100123", "42", "7.5", "t1")
    assert conversation_key("tg", "dm", 0, Decimal(3), thread=1.5) == "tg:dm:0:3:thread:1.5"


HUGE = 10 ** 5000  # past CPython's limit of digits for int-to-text (4,300 by default)


@pytest.mark.parametrize("field", ["chat_id", "sender_id", "message_id", "thread_id"])
def test_a_number_too_long_to_write_out_is_refused_by_name(field) -> None:
    """Such an int raised the interpreter's own ``ValueError`` (no field) from ``str()``."""
    fields = {"chat_id": "c1", "sender_id": "u1", "text": "hi", field: HUGE}
    with pytest.raises(ValidationError) as info:
        Inbound(**fields)
    assert info.value.field == field
    assert "digits" in str(info.value)
    with pytest.raises(ConversationKeyError) as info:
        conversation_key("tg", "dm", "c1", HUGE)
    assert info.value.field == "ids[1]"
    with pytest.raises(ConversationKeyError) as info:
        conversation_key("tg", "dm", "c1", thread=HUGE)
    assert info.value.field == "thread"


def test_an_allowed_sender_too_long_to_write_out_is_refused_by_name() -> None:
    with pytest.raises(ValidationError) as info:
        AccessPolicy.allow("u1", HUGE)
    assert info.value.field == "access"
    assert "digits" in str(info.value)
