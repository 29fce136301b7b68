"""Content blocks: what a delivery carries, and its text fallback.

Block types are ``text``, ``image``, ``audio``, ``video``, ``file`` and ``control``. Every block
has a text fallback (a media block's is its caption, else its summary, else the delivery's
``history_text``, else its file name; a control block has none), so a route that cannot render a
block type still gets something to show.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import attrs

from tidings.errors import ValidationError
from tidings.store._ids import lone_surrogate
from tidings.store._records import frozen

__all__ = [
    "BLOCK_TYPES",
    "MAX_IDEMPOTENCY_KEY_CHARS",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_SEND_BYTES",
    "MAX_TEXT_BYTES",
    "MEDIA_TYPES",
    "ContentBlock",
    "ControlBlock",
    "MediaBlock",
    "TextBlock",
    "block_from_dict",
    "check_capped_text",
    "check_json_object",
    "check_message_text",
    "check_text",
    "check_text_size",
    "fallback_text",
    "frozen_mapping",
    "lone_surrogate",
    "plain_json",
]

MEDIA_TYPES = ("image", "audio", "video", "file")
BLOCK_TYPES = ("text", *MEDIA_TYPES, "control")

MAX_TEXT_BYTES = 1 << 20
"""The most UTF-8 bytes a send's text may have (1 MiB): each text, caption, summary and
history text, and the delivery's text (its blocks' texts joined). A websocket delivery frame
carries the text twice (``text`` and its block), and the gateway's own client takes frames of
at most 4 MiB, so a larger text is refused at the call. (JSON escaping can still make a
frame of a capped text too big: the gateway fails that one delivery, ``frame_too_big``,
rather than send it.) Send a long text as a file."""

MAX_JSON_BYTES = 1 << 16
"""The most bytes the JSON encoding of a send's ``delivery_metadata``, of one control block's
``data`` and of an artifact's metadata may have (64 KiB). Each is stored whole in the outbox
(or the artifact record) and the first two ride in every delivery frame, replayed on every
reconnect: they are small annotations for the adapter, not a payload (send that as a file)."""

MAX_JSON_DEPTH = 100
"""The deepest such JSON (and an approval's ``details``) may nest objects and arrays (the
outermost object is 1). A size cap does not bound it: ``{"a": {"a": ...}}`` 500 deep is a few
kB, and freezing it for the route (two frames a level) crashed the session's lane, the row
left ``unknown`` with its route never called; deeper, the call itself raised a bare
``RecursionError``. Deeper is refused naming the field."""

MAX_SEND_BYTES = 1 << 21
"""The most bytes a send may store beyond its text (2 MiB): the JSON of its blocks, of its
``delivery_metadata`` and of its artifacts' metadata, as the pipeline writes them (non-ASCII
escaped, so each is as many bytes as characters). The caps above bound each part, not how
many there are: a hundred control blocks of 60 kB, or media blocks with a location and a
summary of up to ``MAX_TEXT_BYTES`` each, made a send stored whole, held whole by its lane
and read back whole, that no gateway client could take. A delivery frame carries the text
(at most ``MAX_TEXT_BYTES``) and the blocks (in JSON no longer than stored), so a send within
both caps makes a frame of about 3 MiB at most, within the 4 MiB the gateway sends (JSON
escaping aside, as for ``MAX_TEXT_BYTES``). A send of one text block is not counted: its
blocks are its text, capped already. In a send with other blocks its text blocks count too,
escaped (a non-ASCII character is 6 or 12 bytes: a text of 800 kB of ``é`` and a button are
over it). More is refused naming ``blocks``: send it as files."""

MAX_IDEMPOTENCY_KEY_CHARS = 256
"""The most characters an ``idempotency_key`` may have. A key is stored and indexed with its
delivery and looked up on every keyed send: a name the host chose (an id, a hash), never the
content itself."""


def check_text(value: object, field: str) -> str:
    """*value*, if it is text a UTF-8 column can hold.

    Raises ``TypeError`` for a non-string, and :class:`ValidationError` naming *field* for a
    string with a lone surrogate (what ``os.fsdecode`` makes of non-UTF-8 bytes): SQLite would
    refuse it only in the writer, with an error that names nothing.
    """
    if not isinstance(value, str):
        raise TypeError(f"{field}: expected str, got {type(value).__name__}")
    lone = lone_surrogate(value)
    if lone is not None:
        raise ValidationError(field, f"is not valid Unicode (lone surrogate at index {lone})")
    return value


def check_capped_text(value: object, field: str) -> str:
    """*value*, if :func:`check_text` accepts it and it is at most :data:`MAX_TEXT_BYTES` in
    UTF-8 (:func:`check_text_size`): any text written with a delivery."""
    return check_text_size(check_text(value, field), field)


def check_message_text(value: object, field: str) -> str:
    """*value* as the text of a message, a text block, a progress note or a notice: what
    :func:`check_capped_text` accepts, and not empty. An empty message is refused by most
    platforms (so it would only fail later, at the route) and would write an empty history
    row; a channel with nothing to say sends nothing."""
    text = check_capped_text(value, field)
    if not text:
        raise ValidationError(field, "must not be empty")
    return text


def check_text_size(text: str, field: str) -> str:
    """*text*, or :class:`ValidationError` naming *field* if it is over
    :data:`MAX_TEXT_BYTES` in UTF-8 (short texts are answered without encoding them)."""
    if len(text) * 4 <= MAX_TEXT_BYTES:  # no code point is more than 4 bytes
        return text
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_TEXT_BYTES:
        raise ValidationError(field, f"is {size} bytes of UTF-8, over the limit of "
                                     f"{MAX_TEXT_BYTES} (MAX_TEXT_BYTES); send a long text "
                                     "as a file")
    return text


def check_json_object(value: Mapping[str, Any] | None, field: str, *,
                      max_bytes: int | None = None) -> dict[str, Any]:
    """*value* as the JSON object written for it will hold it (string keys, lists, a copy of
    nested objects; ``None`` is ``{}``), or :class:`ValidationError` naming *field* for what is
    not a mapping or not standard JSON (NaN and infinities included), that nests past
    :data:`MAX_JSON_DEPTH`, or whose JSON (as ``json.dumps`` writes it, non-ASCII escaped) is
    over *max_bytes* (the output SDK passes :data:`MAX_JSON_BYTES`; other callers keep their
    own rules). A nested mapping that is not a dict (the read-only ones tidings hands out,
    passed on) is written as an object, as a tuple is written as an array.

    A key JSON can write is written as a string (``1`` as ``"1"``, ``None`` as ``"null"``), but
    an object with two keys that become one string, at any depth (``{1: "a", "1": "b"}``), is
    refused: reading it back would keep one value and lose the other, silently. So is a key
    or string with a lone surrogate, at any depth: JSON escapes it, so it was stored, but no
    route can send it as UTF-8 (texts and ids are refused the same way).

    Returning the round trip, not the caller's objects, makes what a route or reader sees live
    the same as what is read back after a restart, whatever the caller does after the call.
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValidationError(field, f"must be a mapping, got {type(value).__name__}")
    try:
        encoded = json.dumps(dict(value), allow_nan=False, default=_nested_mapping)
    except RecursionError:
        raise _too_deep(field) from None
    except (TypeError, ValueError) as exc:
        raise ValidationError(field, f"must be JSON-serializable: {exc}") from None
    if max_bytes is not None and len(encoded) > max_bytes:  # ASCII: ensure_ascii's default
        raise ValidationError(field, f"is {len(encoded)} bytes of JSON, over the limit of "
                                     f"{max_bytes} (MAX_JSON_BYTES); send a large payload as "
                                     "a file")
    try:
        result: dict[str, Any] = json.loads(encoded, object_pairs_hook=_unique_keys)
    except _CollidingKeysError as exc:
        raise ValidationError(field, f"has two keys that collide as the JSON key {exc.key!r} "
                                     "(a key 1, 1.5, True or None is written as a string): "
                                     "one value would be lost") from None
    except RecursionError:
        raise _too_deep(field) from None
    # Fewer brackets than the cap (the usual case: two scans in C) cannot nest past it.
    if encoded.count("{") + encoded.count("[") > MAX_JSON_DEPTH and _deeper(result):
        raise _too_deep(field)
    # A surrogate is written only as an escape (``\\udc80``, ASCII JSON): walk the tree (in
    # Python, to name the place) only when one of them is lone, not for every emoji's pair.
    if "\\ud" in encoded and not _utf8_encodable(result):
        where = _lone_surrogate_at(result)
        if where is not None:
            raise ValidationError(field, f"has a {where} that is not valid Unicode (a lone "
                                         "surrogate, such as undecodable bytes make)")
    return result


def _utf8_encodable(value: dict[str, Any]) -> bool:
    """Whether decoded JSON *value* holds no lone surrogate, in C: UTF-8 refuses exactly
    those, and the JSON reader has already joined an escaped pair (an emoji) into its one
    character, so metadata full of emoji is not walked in Python."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _nested_mapping(value: object) -> dict[Any, Any]:
    """A nested mapping that is not a dict, as one for ``json.dumps`` (called only for what it
    cannot write itself): tidings hands out read-only mappings all the way down (an
    ``Outbound``'s ``metadata``, a session's), and a host may pass them on. Anything else is
    the ``TypeError`` ``json.dumps`` would raise."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _deeper(value: dict[str, Any]) -> bool:
    """Whether decoded JSON *value* nests objects and arrays past :data:`MAX_JSON_DEPTH`
    (without recursion: it is checked because it may be deep)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))
    return False


def _lone_surrogate_at(value: dict[str, Any]) -> str | None:
    """Where decoded JSON *value* has a key or string with a lone surrogate (``key at
    ["a"][0]``, ``value at ["k"]``), or None (without recursion; *value* is within
    :data:`MAX_JSON_DEPTH`). Such text can be sent as UTF-8 by no route, as for a text."""
    stack: list[tuple[Any, str]] = [(value, "")]
    while stack:
        node, path = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(key, str) and lone_surrogate(key) is not None:
                return f"key at {path or 'the top'} ({key!r:.40})"
            inner = f"{path}[{key!r:.40}]"
            if isinstance(child, str) and lone_surrogate(child) is not None:
                return f"value at {inner}"
            if isinstance(child, dict | list):
                stack.append((child, inner))
    return None


def _too_deep(field: str) -> ValidationError:
    return ValidationError(field, f"nests objects and arrays more than {MAX_JSON_DEPTH} deep "
                                  "(MAX_JSON_DEPTH)")


class _CollidingKeysError(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A decoded JSON object, or :class:`_CollidingKeysError` for a key it has twice: a JSON
    text :func:`check_json_object` just encoded has one only where two keys became one string."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _CollidingKeysError(key)
            seen.add(key)
    return result


def plain_json(value: Any) -> Any:
    """A read-only value (a frozen record's mappings and tuples, or stored JSON read back)
    as plain JSON types again: dicts with string keys and lists, for an encoder or a person."""
    if isinstance(value, Mapping):
        return {_json_key(key): plain_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain_json(item) for item in value]
    return value


def _json_key(key: object) -> str:
    """*key* as ``json.dumps`` writes an object key (``None`` as ``"null"``, ``True`` as
    ``"true"``, numbers as their JSON); a key JSON cannot write, as ``str()`` shows it."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    return str(key)


def frozen_mapping(field: str, *, deep: bool = False) -> Callable[[object], Mapping[str, Any]]:
    """The converter of a record's mapping *field*: a read-only copy (``None`` is empty;
    *deep* freezes the values too, see :func:`~tidings.store._records.frozen`), or
    :class:`ValidationError` naming *field* for anything else, when the record is made (a list
    failed inside the copy naming nothing, an empty one was taken as ``{}`` and a list of pairs
    passed for a mapping)."""
    def convert(value: object) -> Mapping[str, Any]:
        if value is None:
            return MappingProxyType({})
        if not isinstance(value, Mapping):
            raise ValidationError(field, f"must be a mapping, got {type(value).__name__}")
        if deep:
            try:
                return MappingProxyType({key: frozen(item) for key, item in value.items()})
            except RecursionError:  # nested far too deep, or cyclic: checked later otherwise
                raise _too_deep(field) from None
        return MappingProxyType(dict(value))
    convert.__name__ = f"frozen_mapping_{field}"
    return convert


@attrs.frozen
class TextBlock:
    """Plain text."""

    text: str
    type: ClassVar[str] = "text"

    @property
    def fallback(self) -> str:
        """The text a route that cannot show the block sends instead: the text itself."""
        return self.text

    def as_dict(self) -> dict[str, Any]:
        """The block as it is stored and sent: ``{"type": "text", "text": ...}``."""
        return {"type": "text", "text": self.text}


@attrs.frozen
class MediaBlock:
    """An image, audio, video or file: a resolved local path or an http(s) URL.

    ``location`` is where the route can fetch it; ``source_kind`` is ``path`` or ``url``;
    ``artifact_id`` names the host-owned artifact record written with the delivery.
    """

    type: str
    location: str
    source_kind: str
    name: str
    fallback: str
    caption: str | None = None
    media_type: str | None = None
    summary: str | None = None
    artifact_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The block as it is stored and sent: its fields by name, as plain JSON values."""
        return attrs.asdict(self)


@attrs.frozen
class ControlBlock:
    """A control instruction for the adapter (no text of its own)."""

    action: str
    data: Mapping[str, Any] = attrs.field(factory=dict, converter=frozen_mapping("data"))
    type: ClassVar[str] = "control"

    @property
    def fallback(self) -> str:
        """Empty: a control block is for the route's logic, with no text to show."""
        return ""

    def as_dict(self) -> dict[str, Any]:
        """The block as it is stored and sent: ``type``, ``action`` and ``data`` (a plain dict)."""
        return {"type": "control", "action": self.action, "data": dict(self.data)}


ContentBlock = TextBlock | MediaBlock | ControlBlock


def fallback_text(blocks: tuple[ContentBlock, ...]) -> str:
    """The delivery's text: the blocks' fallbacks joined by newlines (empty ones skipped)."""
    return "\n".join(block.fallback for block in blocks if block.fallback)


def block_from_dict(data: Mapping[str, Any]) -> ContentBlock:
    """Rebuild a block stored with ``as_dict()`` (used when reading the outbox back)."""
    kind = data.get("type")
    if kind == "text":
        return TextBlock(str(data.get("text", "")))
    if kind == "control":
        return ControlBlock(str(data.get("action", "")), data.get("data") or {})
    if kind in MEDIA_TYPES:
        fields = {f.name for f in attrs.fields(MediaBlock)}
        return MediaBlock(**{k: v for k, v in data.items() if k in fields})
    raise ValidationError("blocks.type", f"unknown block type {kind!r}")
