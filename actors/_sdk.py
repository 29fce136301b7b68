"""The output SDK: ``ctx.output`` and ``ctx.input``, the only way a turn asks for delivery.

Validation order is fixed so two implementations cannot disagree: the source type first (a raw
artifact dict is a ``TypeError`` before any history rule), then policy and visibility (and
``history_text`` for non-text history, ``history_text`` only where a history row or a media
fallback uses it, and ``failure_history_text`` only where a history row is written for it to
replace), then paths, then the size of the whole send as the pipeline writes it (beyond a lone
text, :data:`MAX_SEND_BYTES` of JSON: ``DeliveryPipeline`` checks it on the JSON it builds for
the row anyway). Nothing is written unless every check passes.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs
import trio

from tidings.actors._artifacts import (
    ArtifactRef,
    ResolvedSource,
    check_file_name,
    check_source_type,
    names_own_directory,
    resolve_source,
)
from tidings.actors._blocks import (
    BLOCK_TYPES,
    MAX_IDEMPOTENCY_KEY_CHARS,
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
    fallback_text,
)
from tidings.actors._handle import DeliveryHandle
from tidings.actors._pipeline import ArtifactRecord, DeliveryRequest, new_id
from tidings.actors._policy import (
    KINDS,
    HistoryPolicy,
    check_flag,
    check_mode_allows,
    resolve_policy,
)
from tidings.actors._status import MAX_IDS_PER_CALL, check_id_list
from tidings.errors import ValidationError

if TYPE_CHECKING:
    from tidings.actors._turns import TurnContext

__all__ = ["OutputSDK"]

Source = str | os.PathLike[str] | ArtifactRef


@attrs.define(slots=True)
class _Media:
    """A media block before its path is resolved. ``field`` names its source in errors
    (``source`` for ``send_image(...)``, ``blocks[i].source`` for ``send([...])``) and
    ``prefix`` its other fields (``""`` or ``blocks[i].``); ``name`` is a ready-made block's
    name, kept over the file's own. ``metadata`` is its artifact record's, set by
    :func:`_check_media`: its ``ArtifactRef``'s and then its own, as JSON writes them."""

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


class OutputSDK:
    """Delivery methods bound to one turn and one slot default policy."""

    def __init__(self, turn: TurnContext, *, default_policy: HistoryPolicy, name: str) -> None:
        self._turn = turn
        self._default: HistoryPolicy = default_policy
        self._name = name

    @property
    def default_policy(self) -> HistoryPolicy:
        """The history policy a send without ``history_policy=`` gets: the turn's slot default."""
        return self._default

    # --- typed helpers -------------------------------------------------------------------------

    async def send_text(self, text: str, write_history: bool | None = None,
                        history_policy: str | None = None, visible: bool = True,
                        history_text: str | None = None,
                        failure_history_text: str | None = None,
                        delivery_metadata: Mapping[str, Any] | None = None, *,
                        idempotency_key: str | None = None,
                        settles: Iterable[str] = ()) -> DeliveryHandle:
        """Send a text message (a non-empty string, else a ``ValidationError`` naming
        ``text``); returns once the intent is durable. ``failure_history_text``
        replaces the history row's body on the first failure; a send that writes no history
        (transient) refuses it, naming it. ``settles``: held inbound messages
        (``rt.hold_inbound``) this reply answers, released in the same commit, so a crash
        right after it cannot also tell the user they were not answered (refused with
        ``visible=False``: nobody would see the answer)."""
        check_message_text(text, "text")
        return await self._submit([TextBlock(text)], kind="message", write_history=write_history,
                                  history_policy=history_policy, visible=visible,
                                  history_text=history_text,
                                  failure_history_text=failure_history_text,
                                  delivery_metadata=delivery_metadata,
                                  idempotency_key=idempotency_key, settles=settles)

    async def send_image(self, source: Source, caption: str | None = None,
                         media_type: str | None = None, summary: str | None = None,
                         artifact_metadata: Mapping[str, Any] | None = None,
                         **controls: Any) -> DeliveryHandle:
        """Send an image (path inside the workspace or artifact root, http(s) URL, or
        ArtifactRef). Writing history needs ``history_text``. A source the rules refuse
        (``..``, outside both roots, missing, the runtime's own or a private file, another
        session's artifacts, a URL that is not http(s)) raises
        :class:`~tidings.errors.ArtifactError` naming ``source`` (``source.path`` or
        ``source.url`` for an ArtifactRef), with nothing written."""
        return await self._media("image", source, caption, media_type, summary,
                                 artifact_metadata, controls)

    async def send_audio(self, source: Source, caption: str | None = None,
                         media_type: str | None = None, summary: str | None = None,
                         artifact_metadata: Mapping[str, Any] | None = None,
                         **controls: Any) -> DeliveryHandle:
        """Send audio; the same rules as :meth:`send_image`."""
        return await self._media("audio", source, caption, media_type, summary,
                                 artifact_metadata, controls)

    async def send_video(self, source: Source, caption: str | None = None,
                         media_type: str | None = None, summary: str | None = None,
                         artifact_metadata: Mapping[str, Any] | None = None,
                         **controls: Any) -> DeliveryHandle:
        """Send a video; the same rules as :meth:`send_image`."""
        return await self._media("video", source, caption, media_type, summary,
                                 artifact_metadata, controls)

    async def send_file(self, source: Source, caption: str | None = None,
                        media_type: str | None = None, summary: str | None = None,
                        artifact_metadata: Mapping[str, Any] | None = None,
                        **controls: Any) -> DeliveryHandle:
        """Send a file; the same rules as :meth:`send_image`."""
        return await self._media("file", source, caption, media_type, summary,
                                 artifact_metadata, controls)

    async def progress(self, text: str, visible: bool = True,
                       delivery_metadata: Mapping[str, Any] | None = None, *,
                       idempotency_key: str | None = None) -> DeliveryHandle:
        """Send progress: always transient (no history); ``visible=False`` is an error (and a
        ``visible`` that is not a bool a ``TypeError``). Empty text is refused, as for
        :meth:`send_text`."""
        check_message_text(text, "text")
        return await self._status("progress", text, visible, delivery_metadata, idempotency_key)

    async def notice(self, text: str, visible: bool = True,
                     delivery_metadata: Mapping[str, Any] | None = None, *,
                     idempotency_key: str | None = None) -> DeliveryHandle:
        """Send a notice: always transient (no history); ``visible=False`` is an error, and
        so is empty text."""
        check_message_text(text, "text")
        return await self._status("notice", text, visible, delivery_metadata, idempotency_key)

    async def send(self, blocks: Any, kind: str = "message", write_history: bool | None = None,
                   history_policy: str | None = None, visible: bool = True,
                   history_text: str | None = None, failure_history_text: str | None = None,
                   delivery_metadata: Mapping[str, Any] | None = None, *,
                   idempotency_key: str | None = None,
                   settles: Iterable[str] = ()) -> DeliveryHandle:
        """Send content blocks: a block, a string, a block-shaped mapping, or a list of them.

        Block types: text (non-empty), image, audio, video, file, control (a non-empty
        ``action``). Kinds: message, progress, notice (progress and notice never write
        history). ``write_history`` and ``visible``
        take real bools only (otherwise a ``TypeError`` that is also a ``ValidationError``
        naming them). ``settles`` as for :meth:`send_text` (refused for a progress note,
        which may be dropped as stale). Each part has its cap, and so
        has the whole: more than ``MAX_SEND_BYTES`` of JSON stored beyond a lone text (the
        blocks, ``delivery_metadata``, the artifacts' metadata) is a ``ValidationError``
        naming ``blocks``, with nothing written.
        """
        parts = _normalize_blocks(blocks)
        if kind not in KINDS:
            raise ValidationError("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
        check_flag("write_history", write_history, optional=True)
        check_flag("visible", visible)
        if kind != "message":
            if history_policy not in (None, "transient"):
                raise ValidationError("history_policy", f"{kind} is always transient")
            if write_history:
                raise ValidationError("write_history", f"{kind} is always transient")
            if visible is not True:
                raise ValidationError("visible", f"{kind} is always visible")
            history_policy = "transient"
        return await self._submit(parts, kind=kind, write_history=write_history,
                                  history_policy=history_policy, visible=visible,
                                  history_text=history_text,
                                  failure_history_text=failure_history_text,
                                  delivery_metadata=delivery_metadata,
                                  idempotency_key=idempotency_key, settles=settles)

    # --- shared path ---------------------------------------------------------------------------

    async def _media(self, block_type: str, source: Any, caption: str | None,
                     media_type: str | None, summary: str | None,
                     artifact_metadata: Mapping[str, Any] | None,
                     controls: dict[str, Any]) -> DeliveryHandle:
        check_source_type(source)
        unknown = set(controls) - {"write_history", "history_policy", "visible", "history_text",
                                   "failure_history_text", "delivery_metadata",
                                   "idempotency_key"}
        if unknown:
            raise TypeError(f"send_{block_type}() got unexpected keyword(s): "
                            f"{', '.join(sorted(unknown))}")
        media = _Media(block_type, source, caption, media_type, summary, artifact_metadata)
        return await self._submit([media], kind="message", **controls)

    async def _status(self, kind: str, text: str, visible: bool,
                      delivery_metadata: Mapping[str, Any] | None,
                      idempotency_key: str | None) -> DeliveryHandle:
        check_flag("visible", visible)
        if visible is not True:
            raise ValidationError("visible", f"{kind} is always transient, so visible=False "
                                             "would have no effect")
        return await self._submit([TextBlock(text)], kind=kind, write_history=None,
                                   history_policy="transient", visible=True, history_text=None,
                                   failure_history_text=None,
                                   delivery_metadata=delivery_metadata,
                                   idempotency_key=idempotency_key)

    async def _submit(self, parts: Sequence[ContentBlock | _Media], *, kind: str,
                      write_history: bool | None = None, history_policy: str | None = None,
                      visible: bool = True, history_text: str | None = None,
                      failure_history_text: str | None = None,
                      delivery_metadata: Mapping[str, Any] | None = None,
                      idempotency_key: str | None = None,
                      settles: Iterable[str] = ()) -> DeliveryHandle:
        turn = self._turn
        # 2. policy and visibility
        policy = resolve_policy(write_history=write_history, history_policy=history_policy,
                                default=self._default, visible=visible)
        if kind == "message":
            check_mode_allows(policy, turn.mode)
        # An empty text is not given: it would write an empty history row (and satisfy the
        # rule that a non-text send says in words what it was).
        if history_text is not None:
            check_message_text(history_text, "history_text")
        if failure_history_text is not None:
            check_message_text(failure_history_text, "failure_history_text")
            if policy == "transient":  # no history row for it to replace, ever
                raise ValidationError("failure_history_text", "this send writes no history "
                                      "(its policy is transient), so the text would never "
                                      "be used")
            if not visible:  # recorded sent at once, with no attempt: it can never fail
                raise ValidationError("failure_history_text", "a send with visible=False "
                                      "never fails (no route gets it), so the text would "
                                      "never be used")
        if idempotency_key is not None:
            check_text(idempotency_key, "idempotency_key")
            if not idempotency_key:  # every later send with it would be this one, silently
                raise ValidationError("idempotency_key", "must be a non-empty string or None")
            if len(idempotency_key) > MAX_IDEMPOTENCY_KEY_CHARS:  # stored and indexed whole
                raise ValidationError("idempotency_key", f"is {len(idempotency_key)} "
                                      f"characters, over the limit of {MAX_IDEMPOTENCY_KEY_CHARS}"
                                      " (MAX_IDEMPOTENCY_KEY_CHARS); use an id or a hash")
        media = [part for part in parts if isinstance(part, _Media) or part.type in MEDIA_TYPES]
        # Non-text: any media, or no text at all (a control-only send would write "" history).
        non_text = bool(media) or not any(isinstance(part, TextBlock) for part in parts)
        if non_text and policy != "transient" and history_text is None:
            raise ValidationError("history_text", "a non-text send that writes history must "
                                                  "give history_text (the host never invents it)")
        if history_text is not None and policy == "transient" and not any(
                not _shows_its_own_text(part) for part in media):
            # No row to write it to, and no media block to show it as a fallback (one with a
            # caption or summary shows that): it would be dropped without a word (as
            # failure_history_text is refused, above).
            raise ValidationError("history_text", "this send writes no history (its policy is "
                                  "transient) and has no media block to show it as a "
                                  "fallback (none, or each with a caption or summary of its "
                                  "own), so the text would never be used")
        metadata = check_json_object(delivery_metadata, "delivery_metadata",
                                     max_bytes=MAX_JSON_BYTES)
        releases = tuple(check_id_list("settles", settles, max_ids=MAX_IDS_PER_CALL))
        if releases and kind == "progress":  # dropped, not sent late: the message lost unsaid
            raise ValidationError("settles", "a progress note cannot settle held messages: "
                                  "one not delivered by the next start (or for nobody) is "
                                  "dropped (stale_progress), and the user would be told "
                                  "nothing; settle them with the reply or a notice")
        if releases and not visible:  # released, with nothing shown to the user in their stead
            raise ValidationError("settles", "a send with visible=False is shown to nobody, "
                                  "so it cannot answer held messages; settle them with a "
                                  "visible reply or a notice, or drop them on purpose with "
                                  "rt.release_inbound")
        for part in parts:
            if isinstance(part, _Media):
                _check_media(part)
        turn.check_open()
        # 3. paths
        if media:
            if idempotency_key is not None:
                # A retry of a keyed send (the host's, after its own crash) gets the original
                # before any path is looked at: the file it sent may be gone by now.
                pipeline = turn.runtime.pipeline
                existing = await pipeline.existing(turn.session_id, idempotency_key)
                if existing is not None:
                    return await pipeline.answered_by(existing, releases)
            blocks, artifacts = await self._resolve(parts, history_text)
            history_kind = next((b.type for b in blocks if b.type in MEDIA_TYPES), "text")
        else:  # no path to resolve: the common case, without a coroutine
            blocks, artifacts, history_kind = tuple(parts), [], "text"  # type: ignore[arg-type]
        text = check_text_size(fallback_text(blocks), "blocks")  # each part is; all joined too
        request = DeliveryRequest(
            session_id=turn.session_id, turn_id=turn.turn_id, kind=kind, blocks=blocks,
            text=text, channel=turn.channel, policy=policy, visible=visible,
            history_text=history_text, history_kind=history_kind, metadata=metadata,
            failure_history_text=failure_history_text, idempotency_key=idempotency_key,
            artifacts=artifacts, releases=releases)
        # Again after the awaits above (paths, a key's lookup): a turn that ended meanwhile
        # may not have this row written after its end (a next serial turn may have begun).
        return await turn.runtime.pipeline.enqueue(request, check=turn.check_open)

    async def _resolve(self, parts: Sequence[ContentBlock | _Media], history_text: str | None
                       ) -> tuple[tuple[ContentBlock, ...], list[ArtifactRecord]]:
        if not any(isinstance(part, _Media) for part in parts):
            return tuple(parts), []  # type: ignore[arg-type]
        turn = self._turn
        workspace = turn.runtime.workspace
        root = (turn.runtime.artifact_root_for(turn.session_id)
                if names_own_directory(turn.session_id) else None)
        sources = [(part.source, part.field, part.name) for part in parts
                   if isinstance(part, _Media)]
        # Abandoned on a cancel: the checks only read (resolve, stat) and their result is
        # dropped, so a file system that hangs (a dead network mount) cannot hold a cancelled
        # turn (a stop, a /clear, a timeout) until it answers, if ever.
        resolved: list[ResolvedSource] = await trio.to_thread.run_sync(
            _resolve_all, sources, workspace, root, turn.runtime.artifacts_directory,
            turn.runtime.database_paths, turn.runtime.private_files, abandon_on_cancel=True,
            limiter=turn.runtime.path_checks)
        blocks: list[ContentBlock] = []
        artifacts: list[ArtifactRecord] = []
        found = iter(resolved)
        # history_text describes the send once: the first media block without a caption or
        # summary shows it, the others their file names (not the same words once a block).
        spare = history_text
        for part in parts:
            if not isinstance(part, _Media):
                blocks.append(part)
                continue
            source = next(found)  # named part.name, if it has one
            ref = source.ref
            summary = part.summary if part.summary is not None else (ref.summary if ref else None)
            media_type = part.media_type or (ref.media_type if ref else None)
            fallback = part.caption or summary
            if not fallback:
                fallback, spare = spare or source.name, None
            artifact_id = new_id("art")
            blocks.append(MediaBlock(type=part.type, location=source.location,
                                     source_kind=source.kind, name=source.name,
                                     fallback=fallback, caption=part.caption,
                                     media_type=media_type, summary=summary,
                                     artifact_id=artifact_id))
            artifacts.append(ArtifactRecord(artifact_id, part.type, source.kind, source.location,
                                            source.name, media_type, summary, part.metadata))
        return tuple(blocks), artifacts


def _resolve_all(sources: list[tuple[Any, str, str | None]], workspace: pathlib.Path,
                 root: pathlib.Path | None, artifacts: pathlib.Path,
                 databases: Sequence[pathlib.Path],
                 private: Sequence[pathlib.Path]) -> list[ResolvedSource]:
    """Resolve each ``(source, field, name)`` (*name*: a ready-made block's, or None); an
    error names the field of the source that failed (its block's index in a block list, not
    its rank among the media blocks)."""
    return [resolve_source(source, workspace=workspace, artifact_root=root, field=field,
                           artifacts=artifacts, databases=databases, private=private,
                           name=name)
            for source, field, name in sources]


def _shows_its_own_text(part: ContentBlock | _Media) -> bool:
    """Whether a media part's text fallback is its caption or its summary (its
    ``ArtifactRef``'s), as :meth:`OutputSDK._resolve` picks it, not the send's
    ``history_text``."""
    if not isinstance(part, _Media):
        return True
    ref = part.source if isinstance(part.source, ArtifactRef) else None
    summary = part.summary if part.summary is not None else (ref.summary if ref else None)
    return any(isinstance(text, str) and text for text in (part.caption, summary))


def _check_media(part: _Media) -> None:
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


def _normalize_blocks(blocks: Any) -> list[ContentBlock | _Media]:
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


def _normalize_block(block: Any, field: str) -> ContentBlock | _Media:
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
    return _Media(kind, source, block.get("caption"), block.get("media_type"),
                  block.get("summary"), block.get("artifact_metadata"), f"{field}.source",
                  f"{field}.")


def _ready_made_media(block: MediaBlock, field: str) -> _Media:
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
    return _Media(block.type, block.location, block.caption, block.media_type, block.summary,
                  None, f"{field}.location", f"{field}.", block.name or None)
