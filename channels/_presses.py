"""Stop-button press ids (``ChannelBase.cancel_turn(press_id=...)``), remembered as message ids
are, so a platform's retry of one press cancels nothing more.

A press id is recorded in the store's table of client message ids, under the conversation's
key with :data:`PRESSES` appended: a conversation key is made of percent-encoded parts only
(see :mod:`tidings.channels._keys`), so it never holds a space, and a press id never meets a
message id of the same text (a Telegram callback id and a message id may well be equal).
"""

from __future__ import annotations

from tidings.channels._inbound import Inbound
from tidings.errors import ValidationError

__all__ = ["PRESSES", "check_press_id", "presses_key"]

PRESSES = " presses"
"""Appended to a conversation's key to record its press ids (no key holds a space)."""


def check_press_id(press_id: object) -> str | None:
    """*press_id* as the id text (``str()``-ed, as a message id), or None for none (``None``
    or ``""``). Raises :class:`ValidationError` naming ``press_id`` for a value a message id
    could not be either (a bool, bytes, an object, over ``MAX_ID_CHARS`` characters, not valid
    Unicode)."""
    try:
        return Inbound(chat_id="c", sender_id="s", text="", message_id=press_id).message_id
    except ValidationError as exc:
        raise ValidationError("press_id", exc.reason) from None


def presses_key(conversation_key: str) -> str:
    """Where the press ids of the conversation *conversation_key* are recorded."""
    return conversation_key + PRESSES
