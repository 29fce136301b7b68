"""Admitting a gateway connection (the hello) and catching it up (the replay).

The first frame must be a ``hello`` whose token matches (compared in constant time) before
anything else is looked at; otherwise the connection is closed with ``4001`` and a reason,
and nothing was read or written. Then the protocol version (``4002`` for an integer other
than 1; none, or one that is no integer, is a bad hello), then the other fields (``4000``
naming the field). The conversation NAME resolves (or creates) its session under the
directory's lock, which also binds the gateway as its route. A session this gateway was not
the route of until then has its ``unrouted`` rows (left while no gateway had it) handed back
to its lane at once, so they come in seq order before anything newer, whatever the hello says;
a hello that ends before that (refused, failed, cancelled) unbinds it again, for the next one.
So does a session bound here whose ``/resume`` left rows ``unrouted`` (its hand-back cut off or
failed partway: see ``LeftBehind``), and a session bound here whose rows went ``unrouted``
while nobody was connected (``GatewayChannel.away``: held from the hello's pin to its join, so
nothing newer of it goes first). So does every older session of the conversation with
``unrouted`` rows (left by ``/new`` or ``/clear``, named by no client after a restart): its
replies and the "not answered" notices recovery wrote there reach the client too.

Replay (``after_seq`` given): for the session the client names (default: the current one),
rows up to ``after_seq`` still ``sending`` / ``unknown`` become ``sent`` before ``welcome``
is sent. After ``welcome``, message and notice rows after it that are ``sending``,
``unknown`` or ``sent`` are written straight to this connection in seq order; ``unrouted``
ones (left while no gateway of this process had the session bound) are re-queued and come
through the lane; ``queued`` ones come through the lane anyway. If the client names an older
session of the conversation, the current one is then replayed from its start. Progress rows
are never replayed: those after ``after_seq`` still ``unknown`` (the client never got them)
become ``failed`` (``stale_progress``) before ``welcome`` too.

Catch-up (``after_seq`` given, later on): a session outside the plan whose row reaches the
connection live while it has none of that session (another device's ``/resume`` of an older
one, a late reply there) has its earlier rows written first, as a replay writes them, each
frame marked ``"catch_up": true`` (see :func:`catch_up`); a connection whose hello had no
``after_seq`` is sent rows as they come. A replayed or caught-up frame says when its row was
written (``created_at``), against the welcome's ``server_time`` (see :func:`replay`).
"""

from __future__ import annotations

import contextlib
import functools
import hmac
import logging
from typing import TYPE_CHECKING

import attrs
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from tidings.actors import BindToken
from tidings.channels._directory import Conversation
from tidings.channels._gateway_frames import (
    CLOSE_BAD_HELLO,
    CLOSE_GOING_AWAY,
    CLOSE_UNAUTHORIZED,
    CLOSE_UNSUPPORTED,
    HELLO_MAX_BYTES,
    MAX_SERVER_FRAME_BYTES,
    FrameError,
    Hello,
    UnsupportedProtocol,
    delivery_frame,
    encode,
    encoded_size,
    parse_client_frame,
    peek_hello_token,
)
from tidings.channels._handback import requeue_unrouted
from tidings.errors import RuntimeClosedError
from tidings.store._queries import open_outbox_rows
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.channels._gateway import GatewayChannel
    from tidings.channels._gateway_conn import Connection

__all__ = ["Admission", "Refused", "admit", "catch_up", "follow_switch", "replay"]

log = logging.getLogger("tidings.gateway")

_REPLAYED_STATUSES = ("sending", "unknown", "sent", "unrouted")


class Refused(Exception):
    """The connection must be closed with ``code`` / ``reason`` before it is admitted."""

    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@attrs.frozen
class Admission:
    """An authenticated hello, resolved: the conversation, its current session, the highest
    seq assigned there, and what to replay (``(session_id, after_seq)`` pairs, in order)."""

    hello: Hello
    conversation: Conversation
    session_id: str
    last_seq: int
    plan: tuple[tuple[str, int], ...]
    first_queued: int | None = None
    """The seq of the session's first ``queued`` row as the hello settled (its ``unrouted``
    ones handed back), None if none: what the welcome's ``history_seq`` stays below."""


async def _first_frame(gateway: GatewayChannel, ws: WebSocketConnection) -> str | bytes:
    """The first frame, within ``hello_timeout``; a stop (:meth:`stop_accepting`, leaving
    ``serving()``) ends the wait at once with ``1001``, and a connection that upgraded after
    the stop began is refused at once (its wait would have started after the stop ended the
    others)."""
    wait = gateway.settings.hello_timeout
    if not (gateway.accepting and gateway.in_service):
        raise Refused(CLOSE_GOING_AWAY, "server shutting down")
    with trio.move_on_after(wait) as waiting:
        gateway.hello_waits.add(waiting)
        try:
            return await ws.get_message()
        except ConnectionClosed:
            raise Refused(1000, "closed before hello") from None
        finally:
            gateway.hello_waits.discard(waiting)
    if not (gateway.accepting and gateway.in_service):
        raise Refused(CLOSE_GOING_AWAY, "server shutting down")
    raise Refused(CLOSE_UNAUTHORIZED, f"unauthorized: no hello within {wait:g}s")


async def admit(gateway: GatewayChannel, ws: WebSocketConnection,
                pinned: contextlib.ExitStack) -> Admission:
    """Read and check the hello, resolve the session. Raises :class:`Refused`. The
    conversation is pinned on *pinned* (``GatewayChannel.pin``) before it is bound: the
    caller closes it once the connection joined, so no eviction unbinds what the hello
    bound (the sessions its replay and its ``unrouted`` rows need) in between."""
    settings = gateway.settings
    raw = await _first_frame(gateway, ws)
    limit = max(settings.max_frame_bytes, HELLO_MAX_BYTES)  # the hello's own allowance
    try:
        token = peek_hello_token(raw, max_frame_bytes=limit)
    except FrameError:  # too big: said so, whatever its token (a hello may be this one)
        raise Refused(CLOSE_UNAUTHORIZED, f"unauthorized: the hello is over {limit} "
                                          "bytes") from None
    if token is None:
        raise Refused(CLOSE_UNAUTHORIZED, "unauthorized: the first frame must be a hello "
                                          "with a token")
    if not hmac.compare_digest(token.encode("utf-8", "surrogatepass"),
                               settings.token.encode("utf-8")):
        raise Refused(CLOSE_UNAUTHORIZED, "unauthorized: bad token")
    try:
        hello = parse_client_frame(raw, max_frame_bytes=limit)
    except UnsupportedProtocol as exc:  # an integer version, not 1; none at all is a bad hello
        raise Refused(CLOSE_UNSUPPORTED, f"unsupported protocol: {exc.reason}") from None
    except FrameError as exc:
        raise Refused(CLOSE_BAD_HELLO, f"bad hello: {exc.reason}") from None
    assert isinstance(hello, Hello)  # of PROTOCOL_VERSION: the parse checks it first
    if not gateway.accepting:
        raise Refused(CLOSE_GOING_AWAY, "server shutting down")
    conversation = gateway.conversation_named(hello.conversation)
    pinned.enter_context(gateway.pin(conversation))
    try:
        # Held from the bind until its unrouted rows are re-queued: nothing newer goes first.
        async with gateway.directory.lock(conversation), gateway.runtime.hold_binds(gateway):
            cached = gateway.directory.cached(conversation)
            bound = cached is not None and _bound_here(gateway, cached)
            session_id, _ = await gateway.directory.resolve(conversation)
            rebound = [] if bound and session_id == cached else [session_id]
            plan: list[tuple[str, int]] = []
            try:
                if hello.after_seq is not None:
                    plan.append((session_id, hello.after_seq))
                if hello.session_id is not None and hello.session_id != session_id:
                    if not await gateway.owns(conversation, hello.session_id):
                        raise Refused(CLOSE_BAD_HELLO, "bad hello: hello.session_id: not a "
                                                       "session of this conversation")
                    if not _bound_here(gateway, hello.session_id):
                        rebound.append(hello.session_id)
                    gateway.directory.attach(conversation, hello.session_id)
                    if hello.after_seq is not None:
                        plan = [(hello.session_id, hello.after_seq), (session_id, 0)]
                # An older session nobody names (left by /new or /clear) whose rows found no
                # route after a restart: its replies and "not answered" notices go out too.
                for older in await gateway.runtime.unrouted_sessions(gateway.config.name,
                                                                     conversation.key):
                    if older not in (session_id, hello.session_id) \
                            and not _bound_here(gateway, older):
                        gateway.directory.attach(conversation, older)
                        rebound.append(older)
                while rebound:  # before anything newer can be delivered there
                    await requeue_unrouted(gateway.runtime, rebound[0],
                                           gateway.settings.replay_page)
                    del rebound[0]
                # A /resume's, cut short; those that went unrouted with nobody connected.
                for left in (gateway.handback_left, gateway.away):
                    if conversation.key in left:
                        await left.hand_back(gateway.runtime, gateway, conversation.key,
                                             gateway.settings.replay_page)
            except BaseException:
                _unbind(gateway, rebound)
                raise
            last_seq = await gateway.runtime.last_seq(session_id)
            first_queued = await _first_queued(gateway, session_id)
        for replayed_session, after_seq in plan:  # settled before welcome is sent
            for delivery_id in await gateway.runtime.confirm_through(replayed_session,
                                                                     after_seq):
                gateway.sent.pop(delivery_id, None)
            # Never replayed: a progress note the client lacks would stay unknown for good.
            await gateway.runtime.drop_missed_progress(replayed_session, after_seq)
    except RuntimeClosedError:
        raise Refused(CLOSE_GOING_AWAY, "server shutting down") from None
    return Admission(hello, conversation, session_id, last_seq, tuple(plan), first_queued)


async def _first_queued(gateway: GatewayChannel, session_id: str) -> int | None:
    """The seq of *session_id*'s first ``queued`` row, None if none: one seek on the
    outbox's partial index of queued rows (a long session's sent rows are never stepped
    over). Read inside the hello's hold, so no lane claims one meanwhile."""
    rows = await gateway.runtime.store.read(functools.partial(
        open_outbox_rows, after_seq=0, limit=1), session_id)
    return rows[0].seq if rows else None


def follow_switch(gateway: GatewayChannel, admission: Admission) -> Admission:
    """*admission*, its replay extended to the conversation's session now, from its start,
    if the conversation switched to one its plan does not hold since :func:`admit` resolved
    it (another device's ``/new``, ``/resume``, or ``/clear`` and a message, while the hello
    settled its ``after_seq`` in the store). Sync: called as the connection joins, so no
    switch comes between. Without it, the new session's rows sent before the join (its
    switch answer, the next reply) went to the other devices only, and were never replayed.
    A hello without ``after_seq`` replays nothing, so it is left as it is."""
    current = gateway.directory.cached(admission.conversation)
    if not admission.plan or current is None \
            or any(session_id == current for session_id, _ in admission.plan):
        return admission
    return attrs.evolve(admission, plan=(*admission.plan, (current, 0)))


def _unbind(gateway: GatewayChannel, session_ids: list[str]) -> None:
    """The hello bound *session_ids* and ends (refused, failed, cancelled) before it handed
    their ``unrouted`` rows back: unbind them again (still held, so nothing was claimed for
    this gateway meanwhile). Left bound, the next hello would take them for sessions already
    caught up and never hand those rows back, while newer rows went out."""
    router = gateway.runtime.router
    for session_id in session_ids:
        binding = router.binding(session_id)
        if binding is not None and binding.route is gateway:
            router.unbind(BindToken(session_id, binding.serial))


def _bound_here(gateway: GatewayChannel, session_id: str) -> bool:
    """Whether *session_id*'s live route is this gateway now."""
    binding = gateway.runtime.router.binding(session_id)
    return binding is not None and binding.route is gateway


async def replay(gateway: GatewayChannel, conn: Connection,
                 plan: tuple[tuple[str, int], ...]) -> None:
    """Catch *conn* up by *plan* (see the module docstring). Runs in its writer task.
    Each frame says when its row was written (``created_at``, the store's clock, as the
    welcome's ``server_time``): a session switched to while the client was away comes from
    its start, its history and what was written meanwhile (the switch's answer) alike, and a
    client that shows no history (``tidings chat``) tells them apart by its first welcome's
    ``server_time``. So do a catch-up's frames."""
    for session_id, after_seq in plan:
        replayed, requeued = await _write_rows(gateway, conn, session_id, after_seq)
        log.info("event=replayed connection=%d session=%s after_seq=%d rows=%d requeued=%d",
                 conn.id, field(session_id), after_seq, replayed, requeued)


async def catch_up(gateway: GatewayChannel, conn: Connection, session_id: str,
                   before_seq: int) -> None:
    """Write *session_id*'s rows before *before_seq* to *conn*, which said hello with
    ``after_seq`` and had none of that session's rows on this connection when *before_seq*
    was queued for it live (another device's ``/resume`` of an older session, a late reply in
    one): as a replay writes them, before that row and what was queued after it (see
    ``Connection.catches_up``). Those rows all went out before *conn* joined (a session's
    rows are handed over in seq order): none of them comes to it live. Each frame says
    ``"catch_up": true``: to a client that began after those rows (``tidings chat`` shows no
    history), a session it never saw is history, not news, and a switch's answer among them
    (an old ``/new``) is no switch now. Runs in its writer task."""
    written, requeued = await _write_rows(gateway, conn, session_id, 0,
                                          before_seq=before_seq)
    log.info("event=caught_up connection=%d session=%s before_seq=%d rows=%d requeued=%d",
             conn.id, field(session_id), before_seq, written, requeued)


async def _write_rows(gateway: GatewayChannel, conn: Connection, session_id: str,
                      after_seq: int, *, before_seq: int | None = None) -> tuple[int, int]:
    """Write *session_id*'s message and notice rows after *after_seq* (and before
    *before_seq*, if given) that a replay sends, in seq order; hand its ``unrouted`` ones back
    to its lane. How many were written, and handed back. A frame its marks (``catch_up``,
    ``created_at``: optional fields) would push over ``MAX_SERVER_FRAME_BYTES`` goes without
    them, as it went live: a row delivered live is never skipped here for them."""
    rt = gateway.runtime
    page = gateway.settings.replay_page
    key = conn.conversation.key
    requeue: list[str] = []
    cursor = after_seq
    written = 0
    while before_seq is None or cursor + 1 < before_seq:
        rows = await rt.stored_deliveries(session_id, after_seq=cursor, limit=page,
                                          kinds=("message", "notice"),
                                          statuses=_REPLAYED_STATUSES,
                                          max_bytes=rt.dispatcher.lane_bytes)
        if not rows:  # a page cut by size (about lane_bytes of large rows, not
            break  # replay_page of them) is short too: only an empty one is the end
        for row in rows:
            outbound = row.outbound
            cursor = outbound.seq
            if before_seq is not None and cursor >= before_seq:
                break
            if row.status == "unrouted":
                requeue.append(outbound.delivery_id)
                continue
            frame = delivery_frame(outbound)
            marks: dict[str, object] = {}
            if before_seq is not None:  # said: history to a client that began after it
                marks["catch_up"] = True
            if row.created_at is not None:  # against the welcome's server_time (see replay)
                marks["created_at"] = row.created_at
            text = encode({**frame, **marks})
            size = encoded_size(text)
            if size > MAX_SERVER_FRAME_BYTES and marks:  # optional: a row that went out live
                text = encode(frame)  # within the limit is sent as it went, not skipped
                size = encoded_size(text)
            if size > MAX_SERVER_FRAME_BYTES:  # deliver() fails such a row; one claimed
                log.warning("event=replay_skipped connection=%d delivery=%s bytes=%d "
                            "reason=frame_too_big", conn.id, outbound.delivery_id, size)
                continue  # before a crash is not sent either: the client would close on it
            # ``sending``: the lane may still hand it over live. Any status: it may be
            # queued live already (say, ``sent`` by another device's ack since). Not so
            # for a catch-up's rows (see catch_up).
            queued = conn.queued_in_replay
            if before_seq is None and (row.status == "sending" or (
                    queued is not None and outbound.delivery_id in queued)):
                conn.replayed.add(outbound.delivery_id)
            if row.status in ("sending", "unknown"):
                gateway.sent[outbound.delivery_id] = key
            conn.expect_ack(outbound.delivery_id, session_id, outbound.seq)
            await conn.write_encoded(text)
            written += 1
    if requeue:
        await rt.requeue(session_id, requeue)
    return written, len(requeue)
