"""An inbound chat message, and the conversation key its session is bound under."""

from __future__ import annotations

from typing import final

import attrs

from tidings.actors._blocks import check_text
from tidings.actors._status import MAX_ID_CHARS
from tidings.channels._arguments import expect_instance
from tidings.channels._config import ChannelConfig
from tidings.channels._keys import conversation_key, id_refusal
from tidings.errors import ValidationError

__all__ = ["Inbound", "inbound_conversation_key"]


def _required_id(field: str):  # type: ignore[no-untyped-def]
    def convert(value: object) -> str:
        if value is None or isinstance(value, bool | bytes) or value == "":
            raise ValidationError(field, f"must be a non-empty id, got {value!r}")
        refusal = id_refusal(value)
        if refusal is not None:
            raise ValidationError(field, refusal)
        return check_text(str(value), field)
    return convert


def _optional_id(field: str, max_chars: int | None = None):  # type: ignore[no-untyped-def]
    def convert(value: object) -> str | None:
        if value is None or value == "":
            return None
        if isinstance(value, bool | bytes):
            raise ValidationError(field, f"must be text or a number, got {value!r}")
        refusal = id_refusal(value)
        if refusal is not None:
            raise ValidationError(field, refusal)
        text = check_text(str(value), field)
        if max_chars is not None and len(text) > max_chars:
            raise ValidationError(field, f"is {len(text)} characters, over the limit of "
                                         f"{max_chars} (MAX_ID_CHARS), got {text!r:.80}")
        return text
    return convert


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise ValidationError("text", f"must be a string, not {type(value).__name__}")
    return check_text(value, "text")


@final
@attrs.frozen
class Inbound:
    """One message from a platform. Ids are text or numbers, ``str()``-ed (platforms often use
    numbers); ``message_id`` and ``thread_id`` are optional (``""`` counts as missing).

    Raises:
      ValidationError: naming ``chat_id`` / ``sender_id`` when empty or None, any id that is
        neither text nor a number (a bool, bytes, the platform's chat object instead of its
        id: a key made of its text would change with its other fields), ``text`` when it
        is not a string, ``message_id`` when it is over :data:`MAX_ID_CHARS` characters (the
        message is held, and its turn opened, under it: both refuse a longer id), any of them
        when it is not valid Unicode (a lone surrogate: it could be neither stored nor sent).
    """

    chat_id: str = attrs.field(converter=_required_id("chat_id"))
    sender_id: str = attrs.field(converter=_required_id("sender_id"))
    text: str = attrs.field(converter=_text)
    message_id: str | None = attrs.field(default=None,
                                         converter=_optional_id("message_id", MAX_ID_CHARS))
    thread_id: str | None = attrs.field(default=None, converter=_optional_id("thread_id"))


def inbound_conversation_key(config: ChannelConfig, inbound: Inbound) -> str:
    """The conversation key ``inbound``'s session is bound under.

    Session scope ``chat``: ``conversation_key(config.name, "chat", chat_id, thread=thread_id)``;
    scope ``sender``: ``conversation_key(config.name, "sender", chat_id, sender_id)`` (one
    session per sender in each chat, threads shared). Raises ``TypeError`` naming ``config``
    (not a :class:`ChannelConfig`) or ``inbound`` (not an :class:`Inbound`).
    """
    expect_instance("config", config, ChannelConfig)
    expect_instance("inbound", inbound, Inbound)
    if config.session_scope == "sender":
        return conversation_key(config.name, "sender", inbound.chat_id, inbound.sender_id)
    return conversation_key(config.name, "chat", inbound.chat_id, thread=inbound.thread_id)
