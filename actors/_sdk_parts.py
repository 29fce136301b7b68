"""The parts a send is given, checked and normalized before anything else happens: content
blocks, strings and block-shaped mappings (``send([...])``), and media parts, whose paths are
resolved later (``OutputSDK._resolve``). Every block's type is checked before any block's
values, so an earlier block's value rule cannot hide a later one's ``TypeError`` (the
validation order of ``_sdk``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from tidings.actors._artifacts import ArtifactRef, check_file_name, check_source_type
from tidings.actors._blocks import (
    BLOCK_TYPES,
    MAX_JSON_BYTES,
    MEDIA_TYPES,
    ContentBlock,
    ControlBlock,
    MediaBlock,
    TextBlock,
    check_capped_text,
    check_json_object,
    check_message_text,
    check_text,
    check_text_size,
)
from tidings.errors import ValidationError

__all__ = ["MediaPart", "check_media", "normalize_blocks", "shows_its_own_text"]


@attrs.define(slots=True)
class MediaPart:
    """A media block before its path is resolved. ``field`` names its source in errors
    (``source`` for ``send_image(...)``, ``blocks[i].source`` for ``send([...])``) and
    ``prefix`` its other fields (``""`` or ``blocks[i].``); ``name`` is a ready-made block's
    name, kept over the file's own. ``metadata`` is its artifact record's, set by
    :func:`check_media`: its ``ArtifactRef``'s and then its own, as JSON writes them."""

    type: str
    source: Any
    caption: str | None
    media_type: str | None
    summary: str | None
    artifact_metadata: Mapping[str, Any] | None
    field: str = "source"
    prefix: str = ""
    name: str | None = None
    metadata: dict[str, Any] = attrs.field(factory=dict)


def shows_its_own_text(part: ContentBlock | MediaPart) -> bool:
    """Whether a media part's text fallback is its caption or its summary (its
    ``ArtifactRef``'s), as :meth:`OutputSDK._resolve` picks it, not the send's
    ``history_text``."""
    if not isinstance(part, MediaPart):
        return True
    ref = part.source if isinstance(part.source, ArtifactRef) else None
    summary = part.summary if part.summary is not None else (ref.summary if ref else None)
    return any(isinstance(text, str) and text for text in (part.caption, summary))


def check_media(part: MediaPart) -> None:
    """The presentation of one media part, its ``ArtifactRef``'s included: what is written
    with the delivery (its source string or URL included) must be strings (of at most
    ``MAX_TEXT_BYTES``) and JSON (of at most ``MAX_JSON_BYTES``), refused here
    by field rather than failing half-way through building the write."""
    prefix = part.prefix
    own = check_json_object(part.artifact_metadata, prefix + "artifact_metadata",
                            max_bytes=MAX_JSON_BYTES)
    for value, name in ((part.caption, "caption"), (part.summary, "summary"),
                        (part.media_type, "media_type")):
        if value is not None:
            check_capped_text(value, prefix + name)
    ref = part.source
    if isinstance(ref, str):  # a URL (or a path) is stored and sent as it is: capped as text
        check_text_size(ref, part.field)  # (its Unicode is the path rules' to refuse)
    if isinstance(ref, ArtifactRef):
        if isinstance(ref.url, str):
            check_text_size(ref.url, f"{part.field}.url")
        for value, name in ((ref.name, "name"), (ref.summary, "summary"),
                            (ref.media_type, "media_type")):
            if value is not None:
                check_capped_text(value, f"{part.field}.{name}")
        if ref.name:
            check_file_name(f"{part.field}.name", ref.name)
        # Merged as written (``1`` and ``"1"`` are one key: the send's wins), from the
        # checked copies, not the caller's mappings as they are after the send's awaits.
        part.metadata = check_json_object(ref.metadata, f"{part.field}.metadata",
                                          max_bytes=MAX_JSON_BYTES)
    part.metadata.update(own)


def normalize_blocks(blocks: Any) -> list[ContentBlock | MediaPart]:
    items = list(blocks) if isinstance(blocks, list | tuple) else [blocks]
    if not items:
        raise ValidationError("blocks", "at least one block is needed")
    for index, item in enumerate(items):  # every block's type before any block's values
        _check_block_type(item, f"blocks[{index}]")
    return [_normalize_block(item, f"blocks[{index}]") for index, item in enumerate(items)]


def _check_block_type(block: Any, field: str) -> None:
    """``TypeError`` for a block that is not a block, a string or a mapping, for a media
    mapping's source of the wrong type (a raw artifact dict), a ready-made media block's
    ``location`` (its source) and a text or ``action`` that is not a string: the types come
    first, so an earlier block's value rule (an empty text) cannot hide a later one's type
    error."""
    if isinstance(block, Mapping):
        kind = block.get("type")
        if kind in MEDIA_TYPES and block.get("source") is not None:
            check_source_type(block["source"], f"{field}.source")
        elif kind in ("text", "control"):
            name = "text" if kind == "text" else "action"
            _check_str(block.get(name), f"{field}.{name}")
    elif isinstance(block, TextBlock):
        _check_str(block.text, f"{field}.text")
    elif isinstance(block, ControlBlock):
        _check_str(block.action, f"{field}.action")
    elif isinstance(block, MediaBlock):
        _check_str(block.location, f"{field}.location")
    elif not isinstance(block, str):
        raise TypeError(f"{field}: expected a content block, a string or a block-shaped "
                        f"mapping, got {type(block).__name__}")


def _check_str(value: object, field: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{field}: expected str, got {type(value).__name__}")


def _normalize_block(block: Any, field: str) -> ContentBlock | MediaPart:
    if isinstance(block, str):
        return TextBlock(check_message_text(block, f"{field}.text"))
    if isinstance(block, TextBlock):
        check_message_text(block.text, f"{field}.text")
        return block
    if isinstance(block, ControlBlock):  # the same checks as a control mapping
        check_message_text(block.action, f"{field}.action")
        # Its data as written (``1`` as ``"1"``), as a mapping's and a restart's read-back
        # are, not the caller's objects: what the route gets live is what it gets later.
        return ControlBlock(block.action, check_json_object(block.data, f"{field}.data",
                                                            max_bytes=MAX_JSON_BYTES))
    if isinstance(block, MediaBlock):
        return _ready_made_media(block, field)
    assert isinstance(block, Mapping)  # anything else: _check_block_type
    kind = block.get("type")
    if kind not in BLOCK_TYPES:
        raise ValidationError(f"{field}.type", f"must be one of {', '.join(BLOCK_TYPES)}, "
                                               f"got {kind!r}")
    allowed = {"text": {"type", "text"}, "control": {"type", "action", "data"}}.get(
        kind, {"type", "source", "caption", "media_type", "summary", "artifact_metadata"})
    extra = set(block) - allowed
    if extra:
        raise ValidationError(f"{field}.{sorted(extra)[0]}", f"not a field of a {kind} block")
    if kind == "text":
        check_message_text(block.get("text"), f"{field}.text")
        return TextBlock(block["text"])
    if kind == "control":
        check_message_text(block.get("action"), f"{field}.action")  # the block's only content
        data = check_json_object(block.get("data"), f"{field}.data", max_bytes=MAX_JSON_BYTES)
        return ControlBlock(block["action"], data)
    source = block.get("source")
    if source is None:
        raise ValidationError(f"{field}.source", f"a {kind} block needs a source")
    return MediaPart(kind, source, block.get("caption"), block.get("media_type"),
                  block.get("summary"), block.get("artifact_metadata"), f"{field}.source",
                  f"{field}.")


def _ready_made_media(block: MediaBlock, field: str) -> MediaPart:
    """A ready-made :class:`MediaBlock` is a source like any other: its ``location`` obeys the
    same root rules and gets its own artifact record (its ``fallback``, ``source_kind`` and
    ``artifact_id`` are worked out again, never trusted), so a block cannot carry a path out
    of the workspace or the artifact root."""
    if block.type not in MEDIA_TYPES:
        raise ValidationError(f"{field}.type", f"must be one of {', '.join(MEDIA_TYPES)}, "
                                               f"got {block.type!r}")
    check_text(block.location, f"{field}.location")
    if block.name is not None:
        check_capped_text(block.name, f"{field}.name")
        if block.name:
            check_file_name(f"{field}.name", block.name)
    return MediaPart(block.type, block.location, block.caption, block.media_type, block.summary,
                  None, f"{field}.location", f"{field}.", block.name or None)
