"""Accepted messages held until they are dealt with, and the recovery pass that tells about
those a stopped process still held.

A channel holds each message it accepts (:func:`hold`) before the message can start a turn,
with the notice to send should it never be dealt with. The hold is released in the same
transaction as what deals with the message: the end of the turn that answered it
(``open_turn(inbound_ids=...)``), the notice that says it was not answered
(``notify(settles=...)``), or on its own (:func:`release`, for ``/clear``). A turn cut by the
runtime's stop or by a crash releases nothing, so a crash can no longer lose an accepted
message silently: recovery (:func:`tell_held`) sends the notice of each message an earlier
process still held into its session, released in the same commit, so it is told exactly once.
A message whose session was cleared since (or is gone) is released without a notice.

A channel holds a session command's answer the same way, with the command's effect, until the
answer is written (``store._inbound.hold_command_answer``): recovery sends such a held answer
as the command's answer (metadata ``command``), also into the session ``/clear`` closed.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import trio

from tidings.actors._blocks import check_capped_text
from tidings.actors._pipeline import new_id
from tidings.actors._session_io import notice_request
from tidings.actors._status import (
    MAX_IDS_PER_CALL,
    check_id,
    check_id_list,
    check_session_id,
)
from tidings.errors import SessionClosedError, SessionNotFoundError, ValidationError
from tidings.store import HeldInbound, Op, held_inbound, hold_inbound, queries, release_inbound

if TYPE_CHECKING:
    from tidings.actors._runtime import Runtime

__all__ = ["UNANSWERED_METADATA", "hold", "release", "tell_held", "unanswered_metadata"]

log = logging.getLogger("tidings.recovery")

UNANSWERED_METADATA = "unanswered"
"""The metadata key (``True``) of a notice that says a message was not answered; its
``message_ids`` say which."""


def unanswered_metadata(message_ids: Iterable[str]) -> dict[str, object]:
    """The metadata of a "not answered" notice about the messages *message_ids*."""
    return {UNANSWERED_METADATA: True, "message_ids": list(message_ids)}


async def hold(rt: Runtime, session_id: str, *, notice: str, message_id: str | None = None,
               channel: str | None = None, inbound_id: str | None = None,
               also: Sequence[Op] = ()) -> str:
    """Hold an accepted message of *session_id* until it is dealt with; return its inbound id
    (*inbound_id*, or a new one). Returns once the hold is durable; the write is handed to the
    store's writer before the first checkpoint, so writes a caller's other tasks make after
    this call (a turn's end that releases it) queue behind it. *also*: store ops written in
    the same transaction (a channel's own record of the message, such as the gateway's
    client message id).

    Raises:
      ValidationError: naming ``session_id``, ``notice`` (empty, not valid Unicode, or over
        :data:`MAX_TEXT_BYTES`),
        ``message_id``, ``channel`` or ``inbound_id`` (not None or a non-empty string).
      TypeError: *notice* is not a string.
      RuntimeClosedError: the runtime is stopping.
      ConflictError: *inbound_id* is held already.
      SessionNotFoundError: no such session, or :class:`SessionClosedError` (a subclass) for
        one its conversation's ``/clear`` closed (nothing is held: recovery releases the
        messages of a closed session without a notice, so the hold would protect nothing).
    """
    check_session_id("session_id", session_id)
    if not check_capped_text(notice, "notice"):  # it becomes a notice: capped as one
        raise ValidationError("notice", "must not be empty: it is what the user is told")
    if message_id is not None:
        check_id("message_id", message_id)
    if channel is not None:
        check_id("channel", channel)
    inbound_id = new_id("inbound") if inbound_id is None else check_id("inbound_id", inbound_id)
    rt.check_open()
    store = rt.store
    written, *_ = await store.commit([*hold_inbound(
        inbound_id, session_id=session_id, channel=channel, message_id=message_id,
        notice=notice, claimant=store.claimant, now=store.clock()), *also])
    if not written:  # recovery could never tell it: the message would not be protected
        record = await store.read(queries.session, session_id)
        if record is not None:
            raise SessionClosedError(f"session {session_id!r} was cleared; a message held in "
                                     "it would never be told it was not answered")
        raise SessionNotFoundError(f"no session {session_id!r}")
    return inbound_id


async def release(rt: Runtime, inbound_ids: Iterable[str]) -> None:
    """Release held messages that were dealt with otherwise; ids not held are ignored.
    Any number of ids, released :data:`MAX_IDS_PER_CALL` per commit (a release goes with
    nothing else, and one huge commit would hold every session's sends). Raises
    :class:`ValidationError` naming ``inbound_ids`` (a lone string, an id that is not a
    non-empty string of at most :data:`MAX_ID_CHARS` characters) before anything is written."""
    ids = check_id_list("inbound_ids", inbound_ids)
    if not ids:
        await trio.lowlevel.checkpoint()
    for start in range(0, len(ids), MAX_IDS_PER_CALL):
        await rt.store.commit(release_inbound(ids[start:start + MAX_IDS_PER_CALL]))


async def tell_held(rt: Runtime, batch: int) -> int:
    """Send the notice of every message an earlier process still held into its session (a
    transient ``notice`` through the outbox, metadata ``unanswered: true`` and its
    ``message_ids``), releasing it in the same commit; release those of sessions cleared or
    gone. A held command answer is sent as the answer (metadata ``command``), also into a
    cleared session. Returns how many were told (answers included). Idempotent: a message is
    told once.

    Works a page of *batch* held messages at a time; within a page the sessions are told
    concurrently (so their notices share group commits: thousands of held messages after a
    crash cost a few commits, not one each), and one session's notices one after another, in
    the order the messages were held. The messages of sessions cleared or gone are released
    :data:`MAX_IDS_PER_CALL` per commit (as :func:`release`), never all in one.
    """
    store = rt.store
    after, told, released = 0, 0, 0
    dropped: list[str] = []  # of sessions cleared or gone: released without a notice
    while True:
        page = await store.read(held_inbound, store.claimant, after, batch)
        if not page:
            break
        after = page[-1].position
        by_session: dict[str, list[HeldInbound]] = {}
        for held in page:
            if held.session_open:
                by_session.setdefault(held.session_id, []).append(held)
            else:
                dropped.append(held.inbound_id)
        while len(dropped) >= MAX_IDS_PER_CALL:  # as release does: a capped commit each
            await store.commit(release_inbound(dropped[:MAX_IDS_PER_CALL]))
            released += MAX_IDS_PER_CALL
            del dropped[:MAX_IDS_PER_CALL]
        errors: list[Exception] = []
        async with trio.open_nursery() as nursery:
            for session_held in by_session.values():
                nursery.start_soon(_tell_session, rt, session_held, errors)
        if errors:  # as a lone send would fail (a StoreError, the runtime closing), not grouped
            raise errors[0]
        told += sum(map(len, by_session.values()))
    if dropped:
        await store.commit(release_inbound(dropped))
        released += len(dropped)
    if told or released:
        log.warning("event=recovery_unanswered told=%d released=%d", told, released)
    return told


async def _tell_session(rt: Runtime, session_held: Sequence[HeldInbound],
                        errors: list[Exception]) -> None:
    """Tell one session's held messages, each in its own commit (its notice and its release),
    in order; stop at the first that fails and add its error to *errors* (the other
    sessions' notices go on: each commit is whole, and what is not told stays held)."""
    try:
        for held in session_held:
            ids = [] if held.message_id is None else [held.message_id]
            metadata = (unanswered_metadata(ids) if held.command is None
                        else {"command": held.command})  # the answer, as it would have gone
            await rt.pipeline.enqueue(notice_request(
                held.session_id, held.notice, channel=held.channel,
                metadata=metadata, releases=(held.inbound_id,)))
    except Exception as exc:  # noqa: BLE001 -- re-raised by tell_held, unwrapped
        errors.append(exc)
