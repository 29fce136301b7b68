"""What the gateway does with a client's frames after the hello (:func:`on_frame`).

A message is refused while the server stops (``shutting_down``). Its client ``id`` is looked up
in the conversation's durable record first: a known id is answered ``accepted`` with
``duplicate: true`` (and the first outcome, and ``running``: whether a turn that answers it has
not ended yet) and not processed again (a session command's answer its first copy still owes,
cut off by a crash before it went out, is sent it first: see :mod:`._owed_answers`); the same
id on another connection while its first copy is still being handled waits for that one and is
then looked up (a duplicate only of a message that was handled: the first may still fail). A
new message goes through ``handle_inbound`` (commands included; a client the channel's
``access`` does not allow is refused on its own connection, not told to every device) and,
once it was accepted, its id is recorded, as one step that a kill of the connection cannot cut
in two (a resend must be a duplicate); then the client gets ``accepted``. Only a hand-back of
``unrouted`` rows in it (``/resume``'s, or the rows one left, before a message) is cut off by
such a kill or a stop, between pages (see ``_handback.cut_between_pages``). A message that
became a turn has its id written in the commit that holds it (``GatewayChannel._accepted_ops``),
and a ``/new``, ``/clear`` or ``/resume`` in the commit of its effect
(``ChannelBase._command_ops``), so even a crash cannot keep one without the other; a
``/cancel`` has it written before it cancels.

An ack by ``message_ids`` confirms the ``notice`` frames that answered those messages
(commands answered with no session): until then a resend of such an id is sent its answer
again (see :mod:`._owed_answers`). It is free when each id's notice waits for that ack, else
charged as one frame. Any other ack confirms only deliveries of the
connection's own conversation: ids this connection
was sent (once each) or this gateway sent there are confirmed at once, for free; others are
charged to the client's rate and checked against the store: another conversation's
deliveries get ``unknown_delivery``, and ids the store no longer has (a row acked, then pruned
by retention, or never one) are ignored, with no error, as an ack of a row already ``sent``.
An ack by ``up_to_seq`` is free when it covers a seq this connection was sent and had not
acked by seq; any other is charged.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import trio

from tidings.channels._base import HELD_OUTCOMES, REFUSAL, InboundOutcome
from tidings.channels._gateway_frames import (
    Ack,
    Answer,
    Approval,
    ClientFrame,
    FrameError,
    Message,
    Ping,
    Sync,
    error_frame,
)
from tidings.channels._handback import cut_between_pages
from tidings.channels._inbound import Inbound
from tidings.channels._owed_answers import paid_stored
from tidings.errors import RuntimeClosedError, TidingsError, ValidationError
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.channels._gateway import GatewayChannel
    from tidings.channels._gateway_conn import Connection

__all__ = ["on_ack", "on_frame", "on_message"]

log = logging.getLogger("tidings.gateway")


async def on_frame(gateway: GatewayChannel, conn: Connection, frame: ClientFrame) -> None:
    """Handle one parsed frame; a refusal becomes an ``error`` frame. Everything but an ack
    of what this connection was sent is charged to the client's rate (see :func:`on_ack`)."""
    try:
        if isinstance(frame, Message):
            if conn.charge():
                await on_message(gateway, conn, frame)
        elif isinstance(frame, Ack):
            await on_ack(gateway, conn, frame)
            gateway.progressed()
        elif isinstance(frame, Answer | Approval):
            if conn.charge():
                _settle(gateway, conn, frame)
        elif isinstance(frame, Sync):
            if conn.charge():
                await _sync(gateway, conn, frame)
        elif conn.charge() and isinstance(frame, Ping):
            conn.push({"type": "pong"})
    except FrameError as exc:  # refused after the parse: the frame's own id is the ref
        ref = exc.frame_id if exc.frame_id is not None else getattr(frame, "ref", None)
        conn.push(error_frame(exc.code, exc.reason, field=exc.field, ref=ref))


async def _sync(gateway: GatewayChannel, conn: Connection, frame: Sync) -> None:
    conversation = conn.conversation
    session_id = frame.session_id or _current(gateway, conn, "sync")
    if frame.session_id is not None and not await gateway.owns(conversation, session_id):
        raise FrameError("bad_field", "sync.session_id: not a session of this conversation",
                         field="session_id")  # no delivery named: not unknown_delivery
    # The seq a client can reach: a history-only or failed row is never handed to it.
    conn.push({"type": "synced", "session_id": session_id,
               "last_seq": await gateway.runtime.last_handed_seq(session_id)})


def _current(gateway: GatewayChannel, conn: Connection, kind: str) -> str:
    """The conversation's current session, for a frame that names none; from a ``/clear``
    until its next session, the one it cleared (where its newest rows are). Never the
    session the connection said hello in: after ``/new`` and ``/clear`` an older one, whose
    rows an ``ack`` by seq confirmed though the client meant others. None known here (a
    session switch that failed midway): refused, not guessed."""
    session_id = gateway.directory.latest(conn.conversation)
    if session_id is None:
        raise FrameError("missing_field", f"{kind}.session_id: the conversation's session "
                                          "is not known here: name one", field="session_id")
    return session_id


def _settle(gateway: GatewayChannel, conn: Connection, frame: Answer | Approval) -> None:
    # A client the channel's access does not allow has each message refused: it may not
    # answer for the agent either (approve the action it could not have asked for).
    if not gateway.config.access.allows(conn.client):
        raise FrameError("refused", "this client may not answer: the channel's access does "
                                    "not allow it; the answer was not applied")
    key = conn.conversation.key
    if isinstance(frame, Answer):
        gateway.interactions.settle("prompt", frame.prompt_id, key, frame.text)
    else:
        gateway.interactions.settle("approval", frame.request_id, key, frame.decision)


async def on_message(gateway: GatewayChannel, conn: Connection, frame: Message) -> None:
    conversation = conn.conversation
    rt = gateway.runtime
    channel = gateway.config.name
    if not gateway.accepting:
        conn.push(error_frame("shutting_down", "the server is stopping; send it again later",
                              ref=frame.id))
        return
    # A copy still being handled (on another connection: a client that lost its connection
    # and resends) is waited for, then the record read. Answered a duplicate at once, this
    # one would be acknowledged for a message the first may still fail to handle. In flight
    # from before the durable look-up: a copy whose look-up would overlap this one's whole
    # run (and so miss its record) waits instead.
    async with gateway.inflight_ids.handling((conversation.key, frame.id)):
        try:
            known = await rt.client_message_outcome(channel, conversation.key, frame.id)
            if known is not None:
                # A session command's answer its first copy still owes (cut off by a crash
                # before it went out: owed on the id's record) comes before the accepted.
                await _pay_retry(gateway, conn, frame)
                # running: its turn has not ended (a client that waits for that turn's end
                # before its next message, which would steer it, waits on: see README)
                conn.push({"type": "accepted", "id": frame.id, "outcome": known,
                           "duplicate": True,
                           "running": gateway.dispatch.unfinished(conversation, frame.id)})
                return
            inbound = Inbound(chat_id=conversation.chat_id, sender_id=conn.client,
                              text=frame.text, message_id=frame.id)
            # Accepting it has effects (a turn starts, a command commits) and its id is then
            # remembered, as one step that a kill of the connection meanwhile (too slow,
            # shutdown) must not cut in two: the client, never told ``accepted``, would resend
            # it and it would run twice. Bounded: only store requests (which the writer
            # answers) and the conversation's lock (held across store requests only) are
            # awaited; but a hand-back of ``unrouted`` rows (``/resume``'s, or the rows one
            # left, before a message), one page after another, however many, is cut off
            # between pages: the rest stays ``unrouted`` (a ``/resume``'s answer is written
            # and its id was recorded with its effect; a message cut before it is handled
            # was not), handed back at the next message or hello (see ``LeftBehind``).
            with trio.CancelScope(shield=True) as shield, cut_between_pages(shield):
                outcome = await _handle(gateway, conn, inbound)
                if outcome not in HELD_OUTCOMES:  # a turn's id was written with its hold
                    await rt.remember_client_message(
                        channel, conversation.key, frame.id,
                        session_id=gateway.directory.cached(conversation), outcome=outcome)
        except RuntimeClosedError:
            conn.push(error_frame("shutting_down", "the server is stopping; send it again "
                                                   "later", ref=frame.id))
            return
        except ValidationError as exc:  # the message itself is bad (text that is no Unicode)
            conn.push(error_frame("bad_field", f"message.{exc}", field=exc.field,
                                  ref=frame.id))
            return
        except TidingsError as exc:
            log.warning("event=message_failed connection=%d conversation=%s error=%s", conn.id,
                        conversation.key, field(repr(exc)))
            conn.push(error_frame("internal", "the message could not be handled",
                                  ref=frame.id))
            return
    conn.push({"type": "accepted", "id": frame.id, "outcome": outcome})


async def _pay_retry(gateway: GatewayChannel, conn: Connection, frame: Message) -> None:
    """*frame* is a resend of a message handled already: if it is a session command from an
    allowed client, send the answer its first copy still owes (``ChannelBase._pay_retry``),
    as ``handle_inbound`` does for a platform's retry with ``dedupe_message_ids``."""
    inbound = Inbound(chat_id=conn.conversation.chat_id, sender_id=conn.client,
                      text=frame.text, message_id=frame.id)
    if gateway._switches(inbound):
        await gateway._pay_retry(conn.conversation, frame.id)


async def _handle(gateway: GatewayChannel, conn: Connection, inbound: Inbound
                  ) -> InboundOutcome:
    """``handle_inbound``, but a client ``access`` does not allow is refused here, its notice
    sent on its own connection: the channel's refusal, a direct answer, went to every device
    of the conversation, and an allowed one took it for a refusal of its own message."""
    if gateway.config.access.allows(conn.client):
        return await gateway.handle_inbound(inbound)
    gateway._check_accepting()  # as handle_inbound: RuntimeClosedError when stopping
    await trio.lowlevel.checkpoint()
    conn.push({"type": "notice", "text": REFUSAL, "command": None})
    return "refused"


async def on_ack(gateway: GatewayChannel, conn: Connection, frame: Ack) -> None:
    conversation = conn.conversation
    rt = gateway.runtime
    channel = gateway.config.name
    if frame.message_ids is not None:
        await _notices_acked(gateway, conn, frame.message_ids)
        return
    if frame.delivery_ids is None:
        assert frame.up_to_seq is not None
        session_id = frame.session_id or _current(gateway, conn, "ack")
        # Free only when it acks what this connection was sent (then the session is one of
        # its conversation's); otherwise it is a store read like any other frame's work.
        if not conn.take_ack_through(session_id, frame.up_to_seq):
            if not conn.charge():
                return
            if frame.session_id is not None and not await gateway.owns(conversation,
                                                                        frame.session_id):
                raise FrameError("unknown_delivery", "ack.session_id: not a session of this "
                                                     "conversation", field="session_id")
        for delivery_id in await rt.confirm_through(session_id, frame.up_to_seq):
            gateway.sent.pop(delivery_id, None)
        return
    # Free: what this connection was sent (also rows another device acked first) and what
    # the gateway sent this conversation. Anything else (rows sent on a connection that
    # dropped, say) is looked up in one store read, charged as one frame's work whatever the
    # number of ids: charging per id made an ack of more ids than ``burst`` unaffordable.
    ours, others = [], []
    for delivery_id in frame.delivery_ids:
        if conn.take_ack(delivery_id) or gateway.sent.get(delivery_id) == conversation.key:
            ours.append(delivery_id)
        else:
            others.append(delivery_id)
    if others:
        if not conn.charge():
            return
        # An id the outbox no longer has (acked, by another device too, then pruned by
        # retention; or never one) has nothing left to confirm: ignored, as an ack of a row
        # already ``sent`` is. Only another conversation's delivery is refused.
        owners = await rt.delivery_owners(channel, conversation.key, others)
        foreign = [delivery_id for delivery_id in others if owners.get(delivery_id) is False]
        ours += [delivery_id for delivery_id in others if owners.get(delivery_id)]
        if foreign:
            conn.push(error_frame("unknown_delivery", f"not deliveries of this conversation: "
                                                      f"{', '.join(foreign[:5])[:300]}",
                                  field="delivery_ids", ref=frame.ref))
    if ours:
        await rt.confirm(ours)
        for delivery_id in ours:
            gateway.sent.pop(delivery_id, None)


async def _notices_acked(gateway: GatewayChannel, conn: Connection,
                         message_ids: tuple[str, ...]) -> None:
    """The client acked the ``notice`` frames answering *message_ids* (a command's answer
    with no session): each is given, not owed to a resend of its id any more, and cleared on
    the id's record if it was owed there (one store write for them all). Free, as an ack of what
    this connection was sent, when each id's notice waits for its ack; an id whose answer
    this gateway does not keep given (acked already, by another device too, or never sent)
    is ignored, with no error (the client has it, and there is nothing to refuse), but the
    frame is then charged as one frame's work: free, a flood of them was never closed."""
    key = conn.conversation.key
    waiting = True
    stored = []
    for message_id in message_ids:
        owed = gateway.owed_answers.acked(key, message_id)
        if owed is None:
            waiting = False
        elif owed.stored:
            stored.append(message_id)
    if stored:
        await paid_stored(gateway, key, *stored)
    if not waiting:
        conn.charge()  # over the rate: closed
    await trio.lowlevel.checkpoint()
