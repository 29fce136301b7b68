"""One websocket connection of the gateway: its outgoing queue, writer, reader and heartbeat.

Nothing the runtime does ever waits on a client's socket: frames for a connection are put in
its bounded queue without blocking (:meth:`Connection.push`), and only the connection's own
writer task waits on the network. The queue is bounded by frames (``max_backlog``) and by
bytes (``max_backlog_bytes``; a frame that finds it empty is always taken). A client that
stops reading fills it and is closed (``4009``); its deliveries stay in the outbox and it
resumes with ``after_seq``. Streamed ``text_chunk`` frames come faster than a socket takes them
(an agent may stream a long reply in thousands of small pieces): once the queue holds a
quarter of ``max_backlog``, a chunk frame still waiting in it takes the next chunks of the
same message, if no frame of its session was queued after it (:meth:`Connection.push_chunk`:
two sessions of one conversation may stream at once, after ``/new``), so a client that reads
is not closed for the number of pieces, and one that does not read still fills the queue. The writer
sends ``welcome`` first, then the catch-up replay, then the queue, so a client sees each
session's deliveries in seq order; a client that said hello with ``after_seq`` and is sent a
session it has nothing of yet (another device's ``/resume``) gets that session's earlier rows
first, read from the store by the writer where a mark in the queue says (see
:meth:`Connection.catches_up`). The reader parses frames, charges a token bucket (a
client that floods is closed, ``4029``) and hands them to the gateway; the heartbeat pings a
client that has been silent for ``heartbeat_s`` and drops it (``4008``) after twice that. A
client reading a backlog counts as heard from: the ping waits behind that backlog, so one that
reads it slowly but steadily could not answer in time (see :meth:`Connection._send_whole`).

A close never cuts a frame in half: a frame being written when the connection is closed is
finished first (for at most ``_FINISH_WAIT`` seconds), so a client that reads again sees its
frames, then the close code. One still unfinished then leaves the connection torn: its TCP
stream is closed without a close frame (which, after half a frame, would read as garbage).
"""

from __future__ import annotations

import collections
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Collection
from typing import TYPE_CHECKING, Any

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from tidings.actors._blocks import lone_surrogate
from tidings.channels._gateway_frames import (
    CLOSE_FLOOD,
    CLOSE_HEARTBEAT,
    CLOSE_TOO_SLOW,
    MAX_SERVER_FRAME_BYTES,
    ClientFrame,
    FrameError,
    encode,
    encoded_size,
    error_frame,
    parse_client_frame,
)
from tidings.supervisor._log import field

if TYPE_CHECKING:
    from tidings.channels._directory import Conversation
    from tidings.channels._gateway_config import GatewayConfig

__all__ = ["Connection", "TokenBucket"]

log = logging.getLogger("tidings.gateway")

_ids = itertools.count(1)

_ACKS_KEPT = 8192
"""Delivery ids a connection remembers as sent to it and not acked by it (the oldest go
first): enough for a catch-up replay to be acked one frame at a time as it is read."""

_SESSIONS_KEPT = 1024
"""Sessions a catching-up connection (its hello had ``after_seq``) remembers it has from
their start (the least recently sent go first). Kept when the gateway forgets a session (a
``/resume`` may bring it back, and the connection must not be sent its rows again), so bounded:
one of more sessions than this since, resumed, is caught up from its start again."""

_FINISH_WAIT = 2.0
"""Seconds a frame being written when the connection is closed may take to finish."""

_MERGED_CHUNK_BYTES = 1 << 16
"""Bytes a waiting ``text_chunk`` frame may grow to, as it goes out (its JSON escapes
included), by taking the chunks that follow it: small against what a client takes
(``MAX_SERVER_FRAME_BYTES``), and a client that does not read still gets a new frame,
counted, every so many bytes."""

Replay = Callable[["Connection"], Awaitable[None]]
"""Writes the catch-up frames (with :meth:`Connection.write`) after ``welcome``, before the
queue."""

CatchUp = Callable[["Connection", str, int], Awaitable[None]]
"""``catch_up(conn, session_id, before_seq)`` writes the session's rows before *before_seq*
(with :meth:`Connection.write_encoded`) to a catching-up connection that had none of it, before
its first row sent live (see :meth:`Connection.push`)."""


class TokenBucket:
    """``rate`` tokens per second (trio's clock), holding at most ``burst``."""

    def __init__(self, rate: float, burst: int) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.stamp = trio.current_time()

    def take(self, cost: float = 1.0) -> bool:
        now = trio.current_time()
        self.tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if self.tokens < cost:
            return False
        self.tokens -= cost
        return True


def _chunk_bytes(chunk: str, *, escaped: bool) -> int:
    """The bytes *chunk* takes in a frame: its JSON string, quotes left out, in UTF-8, or
    with every non-ASCII character escaped (*escaped*: a frame :func:`encode` escapes)."""
    if escaped:
        return len(json.dumps(chunk)) - 2
    return encoded_size(json.dumps(chunk, ensure_ascii=False)) - 2


class _PendingChunk:
    """A ``text_chunk`` frame in a connection's queue, not taken by its writer yet: while it
    is the last frame of its session in the queue, the chunks of the same message join it (in
    order), and the writer sends them as one frame. Mutable on purpose: it grows in the queue."""

    __slots__ = ("chunks", "escaped", "frame", "size", "text")

    def __init__(self, frame: dict[str, Any], text: str, size: int) -> None:
        self.frame = frame
        self.text = text  # encoded, while it holds one chunk
        self.size = size  # bytes counted in the connection's queued_bytes: as it goes out
        self.chunks = [frame["chunk"]]
        # Its text holds a lone surrogate: it goes out escaped (see encode). Its other
        # fields are ids, which never hold one (refused where they come in).
        self.escaped = lone_surrogate(frame["chunk"]) is not None

    def measure(self, chunk: str) -> tuple[int, bool]:
        """The frame's bytes as it would go out with *chunk* joined, and whether it would go
        out escaped: a chunk adds its own bytes, except that the first one with a lone
        surrogate turns the whole frame escaped (6 bytes a non-ASCII character, where UTF-8
        took 2 to 4), so the frame is measured again whole, once."""
        if self.escaped:
            return self.size + _chunk_bytes(chunk, escaped=True), True
        if lone_surrogate(chunk) is None:
            return self.size + _chunk_bytes(chunk, escaped=False), False
        joined = encode({**self.frame, "chunk": "".join((*self.chunks, chunk))})
        return encoded_size(joined), True

    def join(self, chunk: str, size: int, escaped: bool) -> None:
        """Take *chunk* after its own, the frame now *size* bytes (see :meth:`measure`)."""
        self.chunks.append(chunk)
        self.size = size
        self.escaped = escaped

    def takes(self, frame: dict[str, Any]) -> bool:
        """Whether *frame* is a chunk of the same message (session and client message id)."""
        return (frame["session_id"] == self.frame["session_id"]
                and frame["message_id"] == self.frame["message_id"])

    def encoded(self) -> str:
        if len(self.chunks) == 1:
            return self.text
        return encode({**self.frame, "chunk": "".join(self.chunks)})


class _CatchingUp:
    """A mark in a connection's queue: the session's rows before ``before_seq`` are written
    here (by the writer, which reads them from the store) before the frames queued after it."""

    __slots__ = ("before_seq", "session_id")

    def __init__(self, session_id: str, before_seq: int) -> None:
        self.session_id = session_id
        self.before_seq = before_seq


class Connection:
    """One authenticated client (after its hello) of one conversation."""

    def __init__(self, ws: WebSocketConnection, settings: GatewayConfig, *,
                 conversation: Conversation, client: str) -> None:
        self.id = next(_ids)
        self.ws = ws
        self.settings = settings
        self.conversation = conversation
        self.client = client
        self.bucket = TokenBucket(settings.rate, settings.burst)
        self.last_heard = trio.current_time()
        self.last_written = self.last_heard  # when a frame last went out whole
        self.last_read = self.last_heard  # when a frame of a backlog did (see _send_whole)
        self.close_code: int | None = None
        self.close_reason = ""
        self.replayed: set[str] = set()  # replayed rows that may still arrive live
        # Delivery ids queued while the replay runs (None after it): a row the replay reads
        # and writes may already wait in the queue, whatever status the replay read.
        self.queued_in_replay: set[str] | None = set()
        # What this client was sent and has not acked yet: acking it is free (once).
        self._unacked: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._sent_through: dict[str, int] = {}  # session -> highest seq sent here
        self._acked_through: dict[str, int] = {}  # session -> highest seq acked by seq here
        # A catching-up connection's sessions it has from their start (None: one that said
        # hello without after_seq, which is sent rows as they come; see catches_up)
        self._whole: collections.OrderedDict[str, None] | None = None
        self.written = 0
        self.torn = False  # a frame was cut off: no close frame may follow (see tear())
        self._sending: trio.CancelScope | None = None
        self.queued_bytes = 0  # UTF-8 bytes of the frames in the queue (not yet taken)
        self._send, self._receive = trio.open_memory_channel[
            tuple[str | _PendingChunk | _CatchingUp, str | None, int]](settings.max_backlog)
        self._deep = settings.max_backlog // 4  # a chunk frame may join one queued before
        # session -> its last frame in the queue, if a chunk still waiting (see push_chunk)
        self._joinable: dict[str, _PendingChunk] = {}
        self._scope: trio.CancelScope | None = None

    def __repr__(self) -> str:
        return f"<Connection {self.id} {self.conversation.chat_id!r}>"

    @property
    def alive(self) -> bool:
        """Not closing: neither killed (:meth:`kill`) nor closed by its client (whose close frame
        came in: the websocket takes nothing more, though the frame being written may hold
        the connection in its conversation a while). A closed one is not connected."""
        return self.close_code is None and self.ws.closed is None

    # --- called by the gateway (sync, never blocks) ------------------------------------------

    def push(self, frame: dict[str, Any], *, delivery_id: str | None = None,
             text: str | None = None) -> None:
        """Queue *frame* (*text*: already encoded) for this client. A full queue
        (``max_backlog`` frames, or ``max_backlog_bytes`` with this one; an empty queue takes
        any frame) closes the connection as too slow. A frame over ``MAX_SERVER_FRAME_BYTES``
        is dropped (logged): the client would close on it (the gateway fails such a delivery
        before it gets here)."""
        if not self.alive:
            return
        text = encode(frame) if text is None else text
        size = encoded_size(text)
        if size > MAX_SERVER_FRAME_BYTES:
            log.warning("event=frame_dropped connection=%d type=%s bytes=%d limit=%d",
                        self.id, field(str(frame.get("type"))), size, MAX_SERVER_FRAME_BYTES)
            return
        if delivery_id is not None and not self._has_before(frame["session_id"], frame["seq"]) \
                and not self._enqueue(_CatchingUp(frame["session_id"], frame["seq"]), None, 0):
            return
        if self._enqueue(text, delivery_id, size):
            # A chunk after it may not join one before it: of its session, or of every
            # session for a frame of none (a ping, an error, a command's notice).
            session_id = frame.get("session_id")
            if isinstance(session_id, str):
                self._joinable.pop(session_id, None)
            else:
                self._joinable.clear()
            if delivery_id is not None:
                self.expect_ack(delivery_id, frame["session_id"], frame["seq"])
                if self.queued_in_replay is not None:
                    self.queued_in_replay.add(delivery_id)

    def catches_up(self, session_ids: Collection[str]) -> None:
        """Its hello had ``after_seq``: it is caught up on *session_ids* (its replay plan), and
        from now on every other session's rows reach it from that session's start, the earlier
        ones before the first sent live (another device's ``/resume`` of an older session, a
        late reply there). Called before it joins its conversation. Sync."""
        self._whole = collections.OrderedDict.fromkeys(session_ids)

    def _has_before(self, session_id: str, seq: int) -> bool:
        """Whether a delivery of *session_id* at *seq*, queued now, needs no catch-up before
        it: a connection without ``after_seq`` gets rows as they come; a catching-up one has
        the session from its start already, or this is its first row (a new session's: no
        read). From now on it counts as had from the start. Sync."""
        whole = self._whole
        if whole is None:
            return True
        if session_id in whole:
            whole.move_to_end(session_id)
            return True
        whole[session_id] = None
        while len(whole) > _SESSIONS_KEPT:
            whole.popitem(last=False)
        return seq <= 1

    def _enqueue(self, item: str | _PendingChunk | _CatchingUp, delivery_id: str | None,
                 size: int) -> bool:
        """Put *item* (an encoded frame, or a chunk frame that may still grow) of *size* bytes
        in the queue and count it. False when it is not taken: a queue over its bytes or its
        frames closes the connection as too slow, and a closed queue takes nothing."""
        if self.queued_bytes and self.queued_bytes + size > self.settings.max_backlog_bytes:
            self._too_many_bytes()
            return False
        try:
            self._send.send_nowait((item, delivery_id, size))
        except trio.WouldBlock:
            self.kill(CLOSE_TOO_SLOW, f"too slow: {self.settings.max_backlog} frames unread; "
                                      "reconnect with after_seq to catch up")
            return False
        except (trio.ClosedResourceError, trio.BrokenResourceError):
            return False
        self.queued_bytes += size
        return True

    def _too_many_bytes(self) -> None:
        budget = self.settings.max_backlog_bytes
        self.kill(CLOSE_TOO_SLOW, f"too slow: over {budget} bytes unread; reconnect with "
                                  "after_seq to catch up")

    def push_chunk(self, frame: dict[str, Any]) -> None:
        """Queue a ``lifecycle`` ``text_chunk`` *frame*, as :meth:`push` does, except that a
        queue holding a quarter of ``max_backlog`` frames or more, whose last frame of this
        session is a chunk of the same message (message id) not taken by the writer yet, has
        that frame take this chunk's text after its own (up to ``_MERGED_CHUNK_BYTES`` as it
        goes out, escapes included: see :meth:`_PendingChunk.measure`): an
        agent streams far faster than a socket takes small frames, and a client reading as
        fast as it could was closed as too slow after ``max_backlog`` pieces. It may join
        across frames of other sessions (two turns stream at once after ``/new``: looking at
        the queue's last frame only, alternating chunks never joined), never across a frame
        of its own session or of none, so a session's frames keep their order. Nothing is
        dropped; the byte bound still holds."""
        if not self.alive:
            return
        tail = self._joinable.get(frame["session_id"])
        if tail is not None and tail.takes(frame) \
                and self._send.statistics().current_buffer_used >= self._deep:
            size, escaped = tail.measure(frame["chunk"])
            if size <= _MERGED_CHUNK_BYTES:
                added = size - tail.size
                if self.queued_bytes + added > self.settings.max_backlog_bytes:
                    self._too_many_bytes()
                    return
                tail.join(frame["chunk"], size, escaped)
                self.queued_bytes += added
                return
        text = encode(frame)
        size = encoded_size(text)
        if size > MAX_SERVER_FRAME_BYTES:  # as push() does
            self.push(frame, text=text)
            return
        pending = _PendingChunk(frame, text, size)
        if self._enqueue(pending, None, size):
            self._joinable[frame["session_id"]] = pending

    def silent_for(self, seconds: float) -> bool:
        """Whether it was written everything queued for it (nothing waits, nothing is being
        written) and nothing was heard from it, or written to it, for *seconds*: a client
        that acks would have acked by then (see ``GatewayChannel.drain``)."""
        return (self._sending is None and not self._send.statistics().current_buffer_used
                and trio.current_time() >= max(self.last_heard, self.last_written) + seconds)

    def expect_ack(self, delivery_id: str, session_id: str, seq: int) -> None:
        """Note a delivery queued or written to this client: its ack will be free."""
        self._unacked[delivery_id] = None
        self._unacked.move_to_end(delivery_id)
        while len(self._unacked) > _ACKS_KEPT:
            self._unacked.popitem(last=False)
        self._sent_through[session_id] = max(self._sent_through.get(session_id, 0), seq)

    @property
    def awaiting_ack(self) -> Collection[str]:
        """The delivery ids this client was sent and has not acked (the newest ``_ACKS_KEPT``):
        another connection's leave keeps them unacked (see ``GatewayChannel._leave``)."""
        return self._unacked.keys()

    def take_ack(self, delivery_id: str) -> bool:
        """Whether *delivery_id* was sent to this client and not acked by it yet (from now on
        it counts as acked here: a repeat is not free)."""
        return self._unacked.pop(delivery_id, False) is None

    def take_ack_through(self, session_id: str, seq: int) -> bool:
        """Whether an ack of *session_id* up to *seq* covers a seq sent to this client above
        what it acked by seq before (from now on those count as acked here)."""
        covered = min(seq, self._sent_through.get(session_id, 0))
        if covered <= self._acked_through.get(session_id, 0):
            return False
        self._acked_through[session_id] = covered
        return True

    def forget_sessions(self, session_ids: Collection[str]) -> None:
        """The gateway forgot *session_ids* (left, nothing of them in hand): drop what this
        connection noted of them, or a connection open for weeks kept it per session ever
        served. An ack by seq of one later is looked up in the store (not free). Sync."""
        for session_id in session_ids:
            self._sent_through.pop(session_id, None)
            self._acked_through.pop(session_id, None)

    def kill(self, code: int, reason: str) -> None:
        """Close the connection with *code* / *reason* (the first one given wins)."""
        if self.close_code is None:
            self.close_code, self.close_reason = code, reason
            log.info("event=connection_closing connection=%d conversation=%s code=%d "
                     "reason=%s", self.id, self.conversation.key, code, field(reason))
        self._finish_soon()
        if self._scope is not None:
            self._scope.cancel(reason=reason)

    def _finish_soon(self) -> None:
        """The frame being written (if any) gets ``_FINISH_WAIT`` seconds more, no longer."""
        if self._sending is not None:
            self._sending.deadline = min(self._sending.deadline,
                                         trio.current_time() + _FINISH_WAIT)

    # --- the connection's tasks --------------------------------------------------------------

    async def run(self, welcome: dict[str, Any], replay: Replay,
                  handle: Callable[[Connection, ClientFrame], Awaitable[None]],
                  catch_up: CatchUp | None = None) -> None:
        """Write, read and watch the heartbeat until the client leaves or :meth:`kill`.
        *catch_up* writes a session's earlier rows for a catching-up connection (see
        :meth:`catches_up`): one that catches up needs it."""
        with trio.CancelScope() as scope:
            self._scope = scope
            try:
                if not self.alive:
                    return
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self._writer, welcome, replay, catch_up,
                                       nursery.cancel_scope)
                    nursery.start_soon(self._heartbeat)
                    try:
                        await self._reader(handle)
                    finally:  # however the reader ends (also cancelled from outside)
                        self._finish_soon()
                    nursery.cancel_scope.cancel(reason="the client closed the connection")
            finally:  # both ends, also for a connection already closed when it began
                self._send.close()
                self._receive.close()

    async def _writer(self, welcome: dict[str, Any], replay: Replay, catch_up: CatchUp | None,
                      scope: trio.CancelScope) -> None:
        try:
            await self.write(welcome)
            await replay(self)
            self.queued_in_replay = None
            async for text, delivery_id, size in self._receive:
                if isinstance(text, _CatchingUp):  # the frames after it wait meanwhile
                    assert catch_up is not None  # given for a catching-up one (see run())
                    await catch_up(self, text.session_id, text.before_seq)
                    continue
                if isinstance(text, _PendingChunk):  # taken: nothing joins it from now on
                    if self._joinable.get(text.frame["session_id"]) is text:
                        del self._joinable[text.frame["session_id"]]
                    size = text.size
                    text = text.encoded()
                self.queued_bytes -= size
                if delivery_id is not None and delivery_id in self.replayed:
                    self.replayed.discard(delivery_id)  # replayed already: never twice
                    continue
                await self._send_whole(
                    text, backlog=self._receive.statistics().current_buffer_used > 0)
        except ConnectionClosed:  # the peer went away while we wrote: the connection is over
            scope.cancel(reason="the client closed the connection")

    async def write(self, frame: dict[str, Any]) -> None:
        """Write *frame* now, ahead of the queue (the writer task only: welcome, replay;
        a frame of a backlog, see :meth:`_send_whole`)."""
        await self._send_whole(encode(frame), backlog=True)

    async def write_encoded(self, text: str) -> None:
        """:meth:`write` of a frame encoded already."""
        await self._send_whole(text, backlog=True)

    async def _send_whole(self, text: str, *, backlog: bool) -> None:
        """Write one websocket message whole, or not at all: shielded from :meth:`kill`,
        which only bounds it (see the module docstring). *backlog*: more frames wait to go
        after it (queued behind it, or the replay's): written whole, it shows the client
        reading (``last_read``, which the heartbeat counts as hearing from it), since a
        client that reads nothing stops taking them once the sockets' buffers are full. A
        frame with nothing behind it shows nothing (the buffers take it), nor does the
        heartbeat's own ping: a client that neither reads nor speaks is still closed."""
        if not self.alive:  # closed: start nothing new
            await trio.lowlevel.checkpoint()
            return
        # Shielded: kill() or the reader's end (however it ends: a cancel from outside
        # reaches the reader) only bounds it.
        with trio.CancelScope(shield=True) as sending:
            self._sending = sending
            try:
                await self.ws.send_message(text)
            finally:
                self._sending = None
        if sending.cancelled_caught:
            self.torn = True
            return
        self.written += 1
        self.last_written = trio.current_time()
        if backlog:
            self.last_read = self.last_written

    async def tear(self) -> None:
        """Close the TCP stream under the websocket, with no close frame (after a frame cut
        off, see the module docstring). trio-websocket has no public way to do it."""
        stream = getattr(self.ws, "_stream", None)
        if stream is not None:
            await stream.aclose()

    async def _reader(self, handle: Callable[[Connection, ClientFrame], Awaitable[None]]
                      ) -> None:
        limit = self.settings.max_frame_bytes
        while True:
            try:
                raw = await self.ws.get_message()
            except ConnectionClosed:
                return
            self.last_heard = trio.current_time()
            try:
                frame = parse_client_frame(raw, max_frame_bytes=limit, after_hello=True)
            except FrameError as exc:
                self.charge()
                self.push(error_frame(exc.code, exc.reason, field=exc.field, ref=exc.frame_id))
                continue
            await handle(self, frame)

    def charge(self, cost: float = 1.0) -> bool:
        """Take *cost* from the rate bucket; a client over its rate is closed. False then."""
        if self.bucket.take(cost):
            return True
        self.kill(CLOSE_FLOOD, f"flooding: more than {self.settings.rate:g} frames/s "
                               f"(burst {self.settings.burst})")
        return False

    async def _heartbeat(self) -> None:
        """Ping a client neither heard from nor reading (see :meth:`_send_whole`) for
        ``heartbeat_s``, once per silence, and close it ``4008`` after twice that. Its ping
        waits behind what is queued: a client reading that backlog could not answer it
        sooner, and its reading keeps it."""
        period = self.settings.heartbeat_s
        pinged_for: float | None = None  # the last_heard a ping went for
        while True:
            alive = max(self.last_heard, self.last_read)
            if trio.current_time() < alive + period:
                await trio.sleep_until(alive + period)
                continue
            if pinged_for != self.last_heard:
                pinged_for = self.last_heard
                self.push({"type": "ping"})
            if trio.current_time() < alive + 2 * period:
                await trio.sleep_until(alive + 2 * period)
                continue
            self.kill(CLOSE_HEARTBEAT, f"heartbeat timeout: nothing heard for "
                                       f"{2 * period:g}s")
            return
