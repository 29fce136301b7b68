"""Ids as the runtime takes them (:func:`check_id`), and text that no id can hold
(:func:`lone_surrogate`).

Here, in the store (the bottom layer, whose modules load only what they use), rather than in
the actors that apply them: ``tidings status DELIVERY_ID`` checks an id by the runtime's own
rule without importing trio and the runtime, and the chat client refuses a line that is not
UTF-8 without importing the actors. ``tidings.actors._status`` and ``tidings.actors._blocks``
still publish these names.
"""

from __future__ import annotations

from tidings.store._errors import ValidationError

__all__ = ["MAX_ID_CHARS", "check_id", "escape_lone_surrogates", "lone_surrogate"]

MAX_ID_CHARS = 1024
"""The most characters an id given to the runtime may have (a session, turn, message,
inbound or delivery id, a channel name): ids are stored and indexed whole, and no platform's
ids come near it. Longer ones are refused by field, before anything is written. The id of a
session that exists already is not capped
(:func:`~tidings.actors._status.check_session_id`): earlier versions stored
longer ones."""


def check_id(field: str, value: object, *, max_chars: int | None = MAX_ID_CHARS) -> str:
    """*value* as an id, or :class:`ValidationError` naming *field*: an id that is not a
    non-empty string is a mistake, not an id that happens to be unknown, and so is one of
    more than *max_chars* characters (:data:`MAX_ID_CHARS`; None: no cap) or with a lone
    surrogate (SQLite would refuse it in the writer, naming nothing)."""
    if not isinstance(value, str) or not value:
        raise ValidationError(field, f"must be a non-empty string, got {value!r:.80}")
    if max_chars is not None and len(value) > max_chars:
        name = " (MAX_ID_CHARS)" if max_chars == MAX_ID_CHARS else ""
        raise ValidationError(field, f"is {len(value)} characters, over the limit of "
                                     f"{max_chars}{name}, got {value!r:.80}")
    lone = lone_surrogate(value)
    if lone is not None:  # it could be neither stored nor looked up
        raise ValidationError(field, f"is not valid Unicode (lone surrogate at index {lone})")
    return value


def lone_surrogate(value: str) -> int | None:
    """Where *value* has a lone surrogate, or None: what ``surrogateescape`` makes of bytes that
    are not UTF-8 (a file name, a pipe) and JSON's ``"\\ud800"`` decodes to. Such text can be
    neither stored (SQLite refuses it in the writer, naming nothing) nor sent as UTF-8, so each
    entry point refuses it by name first. ASCII text is answered without encoding it."""
    if value.isascii():
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def escape_lone_surrogates(value: str) -> str:
    """*value* with each lone surrogate written as its escape, the text ``\\udcff``: for
    text that must be stored or sent as UTF-8 whatever it holds (an error's description, a
    log line), rather than refused as an argument would be. Valid text comes back as it is."""
    if lone_surrogate(value) is None:
        return value
    return value.encode("utf-8", "backslashreplace").decode("utf-8")
