"""Conversation keys: the one place that formats (and parses) them.

A key is ``<channel>:<scope>:<id>[:<id>...][:thread:<thread>]``: ``channel`` and ``scope`` are
lowercase identifiers, every id and the thread are percent-encoded UTF-8 keeping only RFC 3986
unreserved characters, so no encoded part ever contains ``:`` and distinct inputs give distinct
keys. Keys are durable (they bind conversations to sessions), so the encoding never changes.
"""

from __future__ import annotations

import numbers
import re
import urllib.parse
from typing import final

import attrs

from tidings.errors import ConversationKeyError

__all__ = ["ConversationKey", "conversation_key", "id_refusal", "parse_conversation_key"]

_NAME = re.compile(r"[a-z][a-z0-9_]*")
_ENCODED = re.compile(r"(?:[A-Za-z0-9._~-]|%[0-9A-F]{2})+")
_THREAD = "thread"
# An id that is literally ``thread`` would read as the thread marker; its first letter is
# percent-encoded instead (a valid, decodable encoding), which keeps keys injective.
_THREAD_AS_ID = "%74hread"


def _check_name(part: str, value: object) -> str:
    if not isinstance(value, str):
        raise ConversationKeyError(part, f"must be a string, not {type(value).__name__}")
    if not _NAME.fullmatch(value):
        raise ConversationKeyError(
            part, f"must be a lowercase identifier matching ^[a-z][a-z0-9_]*$, got {value!r}")
    return value


def id_refusal(value: object) -> str | None:
    """Why *value* cannot be an id (a key's part, an inbound message's id), or None if it can:
    text or a number (``str()``-ed: platforms often send numbers). Not ``None``, bytes, a bool
    (a flag passed by mistake: every chat under one key), nor any other object: a platform's
    chat object passed instead of its id would make a key of its text, which changes with its
    other fields (or, the default repr, with every message). Nor a number too long for
    ``str()`` (an int past the interpreter's limit of digits)."""
    if isinstance(value, str):
        return None
    if isinstance(value, numbers.Number) and not isinstance(value, bool):
        try:
            str(value)
        except ValueError:  # an int past the interpreter's limit of digits (4,300 by default)
            return "is a number too long to write out as an id (too many digits)"
        return None
    if value is None:
        return "must not be None"
    if isinstance(value, bytes | bytearray):
        return "must be text or a number, not bytes (decode it first)"
    if isinstance(value, bool):
        return f"must be text or a number, not the bool {value}"
    return f"must be text or a number (the id, not the object), not a {type(value).__name__}"


def _encode(part: str, value: object) -> str:
    refusal = id_refusal(value)
    if refusal is not None:
        raise ConversationKeyError(part, refusal)
    text = str(value)
    if not text:
        raise ConversationKeyError(part, "must not be empty")
    try:
        return urllib.parse.quote(text, safe="", encoding="utf-8", errors="strict")
    except UnicodeEncodeError as exc:
        raise ConversationKeyError(
            part, f"is not valid Unicode (lone surrogate at index {exc.start})") from None


def conversation_key(channel: str, scope: str, *ids: object, thread: object | None = None) -> str:
    """Build the conversation key for ``ids`` in ``scope`` on ``channel``.

    Each id (and the thread) is ``str()``-ed and percent-encoded as UTF-8; ``thread`` ``None``
    or ``""`` means no thread part. For example ``conversation_key("slack", "channel", "T1",
    "C1", thread="123.4") == "slack:channel:T1:C1:thread:123.4"``.

    Raises:
      ConversationKeyError: naming the bad part (``channel``, ``scope``, ``ids``, ``ids[1]``,
        ``thread``): a name that is not a lowercase identifier, no ids, an id that is empty
        or neither text nor a number (``None``, bytes, a bool, a platform's chat object; a
        thread too, though ``None`` or ``""`` is none), or text that cannot be encoded (a
        lone surrogate).
    """
    parts = [_check_name("channel", channel), _check_name("scope", scope)]
    if not ids:
        raise ConversationKeyError("ids", "at least one id is required")
    for index, value in enumerate(ids):
        encoded = _encode(f"ids[{index}]", value)
        parts.append(_THREAD_AS_ID if encoded == _THREAD else encoded)
    if thread is not None and (not isinstance(thread, str) or thread != ""):
        parts += [_THREAD, _encode("thread", thread)]
    return ":".join(parts)


@final
@attrs.frozen
class ConversationKey:
    """The parts of a conversation key, decoded; ``str()`` gives the key back."""

    channel: str
    scope: str
    ids: tuple[str, ...]
    thread: str | None = None

    def __str__(self) -> str:
        return conversation_key(self.channel, self.scope, *self.ids, thread=self.thread)


def _decode(key: str, encoded: str) -> str:
    if not _ENCODED.fullmatch(encoded):
        raise ConversationKeyError("key", f"{key!r} has a malformed part {encoded!r}")
    try:
        return urllib.parse.unquote_to_bytes(encoded).decode("utf-8")
    except UnicodeDecodeError:
        raise ConversationKeyError(
            "key", f"{key!r} has a part that is not UTF-8: {encoded!r}") from None


def parse_conversation_key(key: str) -> ConversationKey:
    """Split a key made by :func:`conversation_key` back into its decoded parts.

    Raises:
      ConversationKeyError: (field ``key``) if ``key`` is not exactly what
        :func:`conversation_key` would produce for some input.
    """
    if not isinstance(key, str):
        raise ConversationKeyError("key", f"must be a string, not {type(key).__name__}")
    parts = key.split(":")
    if len(parts) < 3:
        raise ConversationKeyError("key", f"{key!r} needs a channel, a scope and an id")
    channel, scope, rest = parts[0], parts[1], parts[2:]
    thread = None
    if len(rest) >= 3 and rest[-2] == _THREAD:
        thread = _decode(key, rest[-1])
        rest = rest[:-2]
    ids = tuple(_decode(key, part) for part in rest)
    try:
        parsed = ConversationKey(channel, scope, ids, thread)
        canonical = str(parsed)
    except ConversationKeyError as exc:
        raise ConversationKeyError("key", f"{key!r}: {exc}") from None
    if canonical != key:
        raise ConversationKeyError("key", f"{key!r} is not in canonical form ({canonical!r})")
    return parsed
