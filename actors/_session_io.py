"""Writing into a session without an agent turn, and asking whether it has had one.

A channel's command answers (``/status`` in a session, ``/cancel`` acknowledged) are
transient notices through the outbox, so they reach the platform only through the session's
route, in order with the session's other deliveries. The user's own messages become ``user``
history rows (later model context sees them); assistant history is untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from tidings.actors._blocks import (
    MAX_JSON_BYTES,
    TextBlock,
    check_json_object,
    check_message_text,
    check_text,
)
from tidings.actors._handle import DeliveryHandle
from tidings.actors._pipeline import DeliveryRequest, new_id
from tidings.actors._status import (
    MAX_ID_CHARS,
    MAX_IDS_PER_CALL,
    check_id,
    check_id_list,
    check_session_id,
)
from tidings.errors import ValidationError
from tidings.store import append_user_message, session_has_turn, session_has_turns

if TYPE_CHECKING:
    from tidings.actors._runtime import Runtime

__all__ = ["has_turns", "notice_request", "notify", "record_user_message",
           "record_user_messages"]

_NOTICE_KINDS = ("notice", "progress")


def _check_text(text: object) -> str:
    return check_text(text, "text")


async def notify(rt: Runtime, session_id: str, text: str, *, kind: str = "notice",
                 metadata: Mapping[str, Any] | None = None,
                 settles: Iterable[str] = ()) -> DeliveryHandle:
    """Send *text* into the session as a transient ``notice`` (or ``progress``) owned by no
    turn; returns once the intent is durable. *settles*: held inbound messages (see
    :mod:`._held`) this notice tells about, released in the same commit.

    Raises:
      TypeError: *text* is not a string.
      ValidationError: ``session_id`` is not a non-empty string, ``kind``, ``metadata`` or
        ``settles`` is bad (``metadata`` over :data:`MAX_JSON_BYTES` of JSON included;
        ``settles`` with ``kind="progress"``, a note that may be dropped as stale), or
        *text* is empty, not valid Unicode or over :data:`MAX_TEXT_BYTES` (what a turn's
        ``ctx.output.notice`` refuses too).
      SessionNotFoundError: no such session.
      RuntimeClosedError: the runtime is stopping.
    """
    check_session_id("session_id", session_id)
    check_message_text(text, "text")
    if kind not in _NOTICE_KINDS:
        raise ValidationError("kind", f"must be one of {', '.join(_NOTICE_KINDS)}, got {kind!r}")
    extra = check_json_object(metadata, "metadata", max_bytes=MAX_JSON_BYTES)
    releases = tuple(check_id_list("settles", settles, max_ids=MAX_IDS_PER_CALL))
    if releases and kind == "progress":  # dropped, not sent late: the message lost unsaid
        raise ValidationError("settles", "a progress note cannot settle held messages: one "
                              "not delivered by the next start (or for nobody) is dropped "
                              "(stale_progress), and the user would be told nothing; "
                              "settle them with a notice")
    rt.check_open()  # before the read: a closed runtime's store can no longer answer
    session = await rt.session(session_id)
    rt.check_open()
    return await rt.pipeline.enqueue(notice_request(
        session_id, text, kind=kind, channel=session.channel, metadata=extra,
        releases=releases))


def notice_request(session_id: str, text: str, *, kind: str = "notice", channel: str | None,
                   metadata: Mapping[str, Any], releases: Iterable[str] = ()
                   ) -> DeliveryRequest:
    """The write of a checked notice (or progress) *text* owned by no turn: transient,
    visible, no history; *releases* the held messages it tells about."""
    return DeliveryRequest(
        session_id=session_id, turn_id=None, kind=kind, blocks=(TextBlock(text),), text=text,
        channel=channel, policy="transient", visible=True, history_text=None,
        history_kind="text", metadata=metadata, releases=tuple(releases))


async def record_user_message(rt: Runtime, session_id: str, text: str, *,
                              turn_id: str | None = None) -> str:
    """Append the user's *text* to the session's history (role ``user``); return the history
    message id. *text* is what the user sent, so unlike a notice it may be empty (a message
    that was only an attachment) and is not capped at :data:`MAX_TEXT_BYTES` (the channel
    bounds what it takes in). Raises ``TypeError`` for a *text* that is not a string, and
    :class:`ValidationError` for one with a lone surrogate, naming ``session_id`` or
    ``turn_id`` unless it is a valid id (None for ``turn_id``: it is stored as the row's
    turn; a ``turn_id`` over ``MAX_ID_CHARS`` only if the session has that turn: earlier
    versions began turns under ids of any length), :class:`SessionNotFoundError` and
    :class:`RuntimeClosedError` as :func:`notify`."""
    _check_text(text)  # named as given here: ``text``, not ``texts[0]``
    [message_id] = await record_user_messages(rt, session_id, (text,), turn_id=turn_id)
    return message_id


async def record_user_messages(rt: Runtime, session_id: str, texts: Iterable[str], *,
                               turn_id: str | None = None) -> list[str]:
    """:func:`record_user_message` of each of *texts*, in order, in one commit: the messages
    merged into one turn reach history all or none (one commit each, a failed write or a
    crash between them left the first half in history, while every one of them was held,
    so told "not answered"). Returns their history message ids. A lone string for *texts*
    is a :class:`ValidationError` naming ``texts`` (it would be recorded one character a
    message); something not iterable, a ``TypeError`` naming ``texts``."""
    check_session_id("session_id", session_id)
    if isinstance(texts, str | bytes):
        raise ValidationError("texts", f"must be a list of texts, not the string {texts!r:.80}")
    try:
        texts = list(texts)  # read once: a generator is used up by the checks below
    except TypeError:
        raise TypeError(f"texts must be a list of texts, got {type(texts).__name__}") from None
    if turn_id is not None:
        check_id("turn_id", turn_id, max_chars=None)  # the cap: below
    for index, text in enumerate(texts):
        check_text(text, f"texts[{index}]")
    rt.check_open()
    await rt.session(session_id)
    # A turn an earlier version began under a longer id (a host chose it; any length was
    # taken then) is taken; another id over MAX_ID_CHARS is refused by name, as before.
    if turn_id is not None and len(turn_id) > MAX_ID_CHARS \
            and not await rt.store.read(session_has_turn, session_id, turn_id):
        check_id("turn_id", turn_id)  # raises
    rt.check_open()
    now = rt.store.clock()
    message_ids = [new_id("msg") for _ in texts]
    await rt.store.commit([op for message_id, text in zip(message_ids, texts, strict=True)
                           for op in append_user_message(message_id, session_id=session_id,
                                                         text=text, now=now,
                                                         turn_id=turn_id)])
    return message_ids


async def has_turns(rt: Runtime, session_id: str, *, excluding: Iterable[str] = ()) -> bool:
    """Whether a turn other than those in *excluding* was ever begun in the session (read
    from the database: it survives restarts). *excluding* is copied before the read. Raises
    :class:`ValidationError` naming ``session_id`` unless it is a non-empty string, and
    ``excluding`` for a lone string (it would be read as its characters) or a turn id that is
    not a non-empty string."""
    check_session_id("session_id", session_id)
    # turns already begun, looked up: a host chose their ids, at any length before the cap
    turns = frozenset(check_id_list("excluding", excluding, "turn ids", max_chars=None))
    return await rt.store.read(session_has_turns, session_id, turns)
