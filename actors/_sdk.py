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

import trio

from tidings.actors._artifacts import (
    ArtifactRef,
    ResolvedSource,
    check_source_type,
    names_own_directory,
    resolve_source,
)
from tidings.actors._blocks import (
    MAX_IDEMPOTENCY_KEY_CHARS,
    MAX_JSON_BYTES,
    MEDIA_TYPES,
    ContentBlock,
    MediaBlock,
    TextBlock,
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
from tidings.actors._sdk_parts import (
    MediaPart,
    check_media,
    normalize_blocks,
    shows_its_own_text,
)
from tidings.actors._status import MAX_IDS_PER_CALL, check_id_list
from tidings.errors import ValidationError

if TYPE_CHECKING:
    from tidings.actors._turns import TurnContext

__all__ = ["OutputSDK"]

Source = str | os.PathLike[str] | ArtifactRef


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
        parts = normalize_blocks(blocks)
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
        media = MediaPart(block_type, source, caption, media_type, summary, artifact_metadata)
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

    async def _submit(self, parts: Sequence[ContentBlock | MediaPart], *, kind: str,
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
        media = [part for part in parts if isinstance(part, MediaPart) or part.type in MEDIA_TYPES]
        # Non-text: any media, or no text at all (a control-only send would write "" history).
        non_text = bool(media) or not any(isinstance(part, TextBlock) for part in parts)
        if non_text and policy != "transient" and history_text is None:
            raise ValidationError("history_text", "a non-text send that writes history must "
                                                  "give history_text (the host never invents it)")
        if history_text is not None and policy == "transient" and not any(
                not shows_its_own_text(part) for part in media):
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
            if isinstance(part, MediaPart):
                check_media(part)
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

    async def _resolve(self, parts: Sequence[ContentBlock | MediaPart], history_text: str | None
                       ) -> tuple[tuple[ContentBlock, ...], list[ArtifactRecord]]:
        if not any(isinstance(part, MediaPart) for part in parts):
            return tuple(parts), []  # type: ignore[arg-type]
        turn = self._turn
        workspace = turn.runtime.workspace
        root = (turn.runtime.artifact_root_for(turn.session_id)
                if names_own_directory(turn.session_id) else None)
        sources = [(part.source, part.field, part.name) for part in parts
                   if isinstance(part, MediaPart)]
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
            if not isinstance(part, MediaPart):
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
