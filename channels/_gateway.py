"""The websocket gateway: a channel whose clients speak JSON over trio-websocket and ack.

A conversation NAME is the session bound to ``conversation_key("gateway", "conv", NAME)``;
every connection that says the same NAME shares it (two devices get all its deliveries). The
gateway is the route of those sessions with an ack window: ``deliver()`` queues the frame on
each connection and returns, the row stays ``sending`` until a client acks it, and when the
last connection of a conversation goes, its unacked rows become ``unknown`` until the client
comes back with ``after_seq`` (see :mod:`._gateway_admit`). While nobody is connected, a
delivery is not held: ``deliver()`` raises ``RecipientAway`` and the row goes ``unrouted``
(so do the session's later rows), and the conversation's next hello hands them back, in seq
order before anything newer (see :meth:`GatewayChannel.deliver`). Only while a hello of the
conversation is on its way in (between its bind and its join) does a delivery wait for it.
Past ``idle_conversations``, conversations nobody is connected to with nothing in hand are
evicted (see :meth:`GatewayChannel._evictable`): a row written in one then goes ``unrouted``
too, and its client's next hello hands it back, as after a restart.

Inbound ``message`` frames go through :meth:`ChannelBase.handle_inbound` (commands included);
a client message id is remembered durably once accepted, so a repeat is answered
``accepted`` with ``duplicate: true`` and not processed again. Lifecycle events are sent as
``lifecycle`` frames (ephemeral); prompts and approvals through :mod:`._gateway_interact`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Collection, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from functools import partial
from typing import Any

import trio
from trio_websocket import (
    ConnectionClosed,
    WebSocketConnection,
    WebSocketRequest,
    WebSocketServer,
)

from tidings.actors import ApprovalDecision, ApprovalRequest, Outbound, Prompt, PromptAnswer
from tidings.actors._router import RecipientAway
from tidings.channels._agents import Agent
from tidings.channels._base import ChannelBase
from tidings.channels._config import ChannelConfig
from tidings.channels._directory import Conversation
from tidings.channels._gateway_admit import (
    Admission,
    Refused,
    admit,
    catch_up,
    follow_switch,
    replay,
)
from tidings.channels._gateway_config import GatewayConfig
from tidings.channels._gateway_conn import Connection
from tidings.channels._gateway_frames import (
    CLOSE_GOING_AWAY,
    CLOSE_INTERNAL,
    HELLO_MAX_BYTES,
    MAX_SERVER_FRAME_BYTES,
    PROTOCOL_VERSION,
    delivery_frame,
    encode,
    encoded_size,
)
from tidings.channels._gateway_hub import Hub, lifecycle_frame, notice_frame
from tidings.channels._gateway_inbound import on_frame
from tidings.channels._gateway_interact import Interactions
from tidings.channels._gateway_listen import Handshakes, open_listeners
from tidings.channels._handback import LeftBehind
from tidings.channels._in_flight import InFlight
from tidings.channels._inbound import Inbound
from tidings.channels._keys import conversation_key
from tidings.channels._lifecycle import TaskLifecycleEvent
from tidings.errors import ConfigError, SessionNotFoundError, TidingsError, ValidationError
from tidings.supervisor._log import field

__all__ = ["FrameTooBig", "GatewayChannel", "StaleProgress", "check_gateway_channel_config"]

log = logging.getLogger("tidings.gateway")

_CLOSE_WAIT = 2.0
_HANDSHAKE_WAIT = 10.0  # the websocket (HTTP) handshake, before the hello's own timeout
_ACK_SILENCE = 2.0
"""Seconds a client written everything it was sent may stay silent (no frame from it) before
:meth:`GatewayChannel.drain` stops waiting for its acks. A client that acks does it as a frame
arrives (``tidings chat``, ``docs/chat.html``), a round trip well within this even on a poor
mobile link; one silent for longer is not acking, and waiting on until the grace ends only
held the stop up: what it leaves unacked stays durable (``unknown``, replayed at its next
hello with ``after_seq``, which turns what it already has ``sent``)."""


class StaleProgress(TidingsError):
    """A progress note for a conversation nobody is connected to: worth nothing later."""


class FrameTooBig(TidingsError):
    """A delivery whose frame is over ``MAX_SERVER_FRAME_BYTES``: no client would take it
    (its connection would close ``1009`` at every replay), so the delivery fails."""


def check_gateway_channel_config(config: ChannelConfig) -> None:
    """Refuse a channel config the gateway cannot honour, naming the field: its conversations
    are client NAMEs, one session each, shared by every client that says it, so a
    ``session_scope`` of ``sender`` (a session per client) would be silently ignored.
    ``tidings serve`` calls it when it reads its config, before it makes anything."""
    if config.session_scope != "chat":
        raise ConfigError(f"channels.{config.name}.session_scope",
                          f"the gateway has one session per conversation NAME, shared by its "
                          f"clients: only 'chat' is taken, got {config.session_scope!r}")


class GatewayChannel(ChannelBase):
    """The websocket gateway channel (see the module docstring).

    ``settings`` says where to listen and how to treat clients; ``config`` is the channel's
    config (default ``ChannelConfig("gateway")``). Serve with ``async with
    gateway.serving() as port``; stop with :meth:`stop_accepting`, :meth:`drain` and
    :meth:`aclose`.
    """

    capabilities = frozenset({"text", "image", "audio", "video", "file"})

    def __init__(self, runtime: Any, settings: GatewayConfig, config: ChannelConfig | None = None,
                 agent: Agent | None = None) -> None:
        if not isinstance(settings, GatewayConfig):  # (its attributes are read below)
            raise ValidationError("settings", f"must be a GatewayConfig, got {settings!r:.80}")
        config = ChannelConfig("gateway") if config is None else config
        if not isinstance(config, ChannelConfig):
            raise ValidationError("config", f"must be a ChannelConfig, got {config!r:.80}")
        check_gateway_channel_config(config)
        super().__init__(runtime, config, agent)
        self.settings = settings
        self.ack_window = settings.ack_window
        self.hubs: dict[str, Hub] = {}
        self.interactions = Interactions(timeout=settings.prompt_timeout,
                                         clock=runtime.store.clock)
        self.accepting = True
        self.in_service = False  # serving() runs and is not leaving: a hello may join
        self.hello_waits: set[trio.CancelScope] = set()  # connections waiting for a hello
        self.closed = False
        self.sent: dict[str, str] = {}  # delivery id -> conversation key, until acked
        # delivery id -> (session, seq): in deliver(), at its schedule point before broadcast
        self.starting: dict[str, tuple[str, int]] = {}
        # session -> conversation key, served here, until the directory forgets the session
        # (a left one with nothing in hand: see _sessions_forgotten)
        self.session_keys: dict[str, str] = {}
        # (conversation key, client message id) being handled now (see _gateway_inbound)
        self.inflight_ids = InFlight()
        # conversation key -> hellos between their bind and their join (see pin)
        self._pinned: dict[str, int] = {}
        # sessions bound here whose rows went unrouted with nobody connected (see deliver)
        self.away = LeftBehind()
        self._delivering = 0
        self._quiet = trio.Event()
        self._quiet.set()
        self._progress = trio.Event()
        self._listener: trio.CancelScope | None = None
        self._handshakes = Handshakes()
        self.port: int | None = None  # where it listens now (set by serving())

    # --- conversations -----------------------------------------------------------------------

    def conversation_named(self, name: str) -> Conversation:
        """The conversation a client NAME means: ``<channel>:conv:<NAME>``."""
        return Conversation(conversation_key(self.config.name, "conv", name), name)

    def conversation_for(self, inbound: Any) -> Conversation:
        return self.conversation_named(inbound.chat_id)

    hands_back_unrouted = False  # each client's hello does it (channels/_gateway_admit.py)

    def _conversation_from_key(self, key: str) -> Conversation | None:
        """The conversation of the key *key* a client NAME makes (``<channel>:conv:<NAME>``),
        or None: what the router's resolver rebinds a session of an evicted one to."""
        parsed = self._own_key(key, "conv")
        if parsed is None or len(parsed.ids) != 1 or parsed.thread is not None:
            return None
        return self.conversation_named(parsed.ids[0])

    def _evictable(self, conversation: Conversation, session_ids: tuple[str, ...]) -> bool:
        """Whether idle *conversation* may be evicted (past ``idle_conversations``): as any
        channel's, and it has no hub (no client connected, no delivery in :meth:`deliver`,
        no leave still turning its unacked rows ``unknown``: what was sent there and not
        acked is forgotten before its hub goes), and no hello between its bind and its join
        (:meth:`pin`). Rows left ``unrouted`` for its next hello do not keep it, whether they
        went there with nobody connected (:attr:`away`) or a ``/resume``'s hand-back was cut
        short (:attr:`handback_left`: the resume made its session current durably first): a
        host's row in an evicted one's session goes ``unrouted`` as well (see
        :meth:`_resolve_route`); its next hello reads its sessions from the store again and
        hands all those rows back, in seq order before anything newer, as after a restart.
        Kept for the note, a conversation whose client never came back was held for good."""
        key = conversation.key
        return (key not in self.hubs and key not in self._pinned
                and super()._evictable(conversation, session_ids))

    async def _resolve_route(self, session_id: str) -> None:
        """No route resolved for a session of an evicted conversation: its client is away
        (a connected one keeps it bound), so a row there would only be claimed for
        :meth:`deliver` to find nobody (``RecipientAway``), binding it again for nothing.
        Left ``unrouted`` at once, it costs nothing here and goes out at the client's next
        hello, which hands the session's ``unrouted`` rows back first
        (``_gateway_admit``)."""

    @contextmanager
    def pin(self, conversation: Conversation) -> Iterator[None]:
        """Keep *conversation* from eviction for the block: a hello from its bind (under the
        directory's lock) until its connection joins the hub (see ``_serve_one``).

        Its sessions whose rows went ``unrouted`` with nobody connected (:attr:`away`: the
        hello hands those back) are held for the block too (``hold_sessions``): their lanes
        claim nothing and hand nothing to :meth:`deliver` until the connection has joined,
        so no newer row goes out before those, nor goes ``unrouted`` after the hello read
        them (a row in :meth:`deliver` when the hold began goes back to ``queued``: see
        ``RecipientAway``). A delivery of another of its sessions with nobody connected
        waits for the join meanwhile; the block's end wakes it (the hello refused or
        failed: nobody came)."""
        key = conversation.key
        held = self.away.sessions(key)
        dispatcher = self.runtime.dispatcher
        dispatcher.hold_sessions(held)
        self._pinned[key] = self._pinned.get(key, 0) + 1
        try:
            yield
        finally:
            dispatcher.release_sessions(held)
            if self._pinned[key] == 1:
                del self._pinned[key]
                hub = self.hubs.get(key)
                if hub is not None:
                    hub.wake()
            else:
                self._pinned[key] -= 1

    async def _hand_back_if_due(self, conversation: Conversation, *,
                                locked: bool = False) -> None:
        """Before the conversation's next message is handled: hand back the rows a
        ``/resume`` of a session bound here left ``unrouted`` (its hand-back cut off or failed
        partway: see ``LeftBehind``), as other channels do at each message; a hello would
        skip that session. No checkpoint, no store read, when none was left. *locked*: the
        caller holds the conversation's lock already."""
        if conversation.key not in self.handback_left:
            return
        if not locked:
            async with self.directory.lock(conversation):
                await self._hand_back_if_due(conversation, locked=True)
            return
        async with self.runtime.hold_binds(self):
            await self.handback_left.hand_back(self.runtime, self, conversation.key,
                                               self.settings.replay_page)

    def _dedupes(self, inbound: Inbound) -> bool:
        """No look-up in :meth:`handle_inbound`: a connection looks its client's message id
        up (and marks it in flight) before it calls it (see ``_gateway_inbound``)."""
        return False

    def _remembers(self, inbound: Inbound) -> bool:
        """Every client's message id is remembered with the hold of its turn (see
        :meth:`ChannelBase._accepted_ops`)."""
        return inbound.message_id is not None

    def _sessions_forgotten(self, conversation: Conversation, session_ids: list[str]) -> None:
        """The directory forgot sessions *conversation* left, with nothing of theirs in hand
        (no turn, nothing queued, unacked or being sent): no row of theirs is left for
        :meth:`_abandon` or :meth:`drain`, so their entries go too (one was kept per session
        ever served), as do each connection's notes of them (the seqs it was sent and acked
        there: a later ack by seq of such a session is looked up in the store), and the notes
        of their rows left ``unrouted`` for a hello (:attr:`away`, :attr:`handback_left`). A
        client naming one later is bound to it again by its hello, which hands those rows
        back from the store, and a delivery there notes it again."""
        super()._sessions_forgotten(conversation, session_ids)
        for left in (self.handback_left, self.away):  # the hello binding them finds theirs
            left.forget(conversation.key, session_ids)
        for session_id in session_ids:
            if self.session_keys.get(session_id) == conversation.key:
                del self.session_keys[session_id]
        hub = self.hubs.get(conversation.key)
        for conn in hub.connections if hub is not None else ():
            conn.forget_sessions(session_ids)

    def hub(self, conversation: Conversation) -> Hub:
        """The conversation's hub, made if it has none (a hub is kept only while a connection
        or a delivery holds it: see :meth:`_release`)."""
        hub = self.hubs.get(conversation.key)
        if hub is None:
            hub = self.hubs[conversation.key] = Hub(conversation)
        return hub

    @contextmanager
    def _holding(self, hub: Hub) -> Iterator[Hub]:
        """Hold *hub* (``users``) for the block, so no other leave or delivery drops it;
        drop it after if it is idle then (:meth:`_release`)."""
        hub.users += 1
        try:
            yield hub
        finally:
            hub.users -= 1
            self._release(hub)

    def _release(self, hub: Hub) -> None:
        """Drop *hub* once it is idle (no connection, no delivery or leave holding it), so a
        server keeps no hub per conversation ever connected. Sync: a hello joins
        (:meth:`_join`, sync too) either this hub before it goes or a new one after, never a
        dropped one."""
        if hub.idle and self.hubs.get(hub.conversation.key) is hub:
            del self.hubs[hub.conversation.key]

    def _broadcast(self, key: str, frame: dict[str, Any]) -> None:
        """Queue *frame* on the connections conversation *key* has now (a question asked
        before every client left and came back closes on the hub they came back to)."""
        hub = self.hubs.get(key)
        if hub is not None:
            hub.broadcast(frame)

    async def owns(self, conversation: Conversation, session_id: str) -> bool:
        """Whether *session_id* belongs to *conversation* (its durable owner)."""
        if self.conversation_of(session_id) == conversation:
            await trio.lowlevel.checkpoint()
            return True
        try:
            record = await self.runtime.session(session_id)
        except SessionNotFoundError:
            return False
        return record.channel == self.config.name and record.conversation_key == conversation.key

    # --- the route ---------------------------------------------------------------------------

    async def deliver(self, outbound: Outbound) -> None:
        """Queue the delivery on every connection of its conversation. With none connected
        (one being closed is none: it takes nothing), raise ``RecipientAway``: the row goes
        ``unrouted`` (so do the session's later rows while nobody comes), its session is
        noted in :attr:`away`, and the conversation's next hello hands them back, in seq
        order before anything newer (``_gateway_admit``). Held here for a client instead,
        it kept its conversation (hub, binding, the session's lane blocked in this call)
        for as long as the server ran: a user who left while a turn ran was never evicted.
        Only while a hello of the conversation is on its way in (:meth:`pin`) does it wait
        for that connection, unless its session is held (that hello hands its older rows
        back: ``RecipientAway`` then sends it back to ``queued``, behind them). A
        progress note with nobody connected is not kept: :class:`StaleProgress` (``failed``,
        as recovery fails stale progress); nor is a frame no client would take:
        :class:`FrameTooBig` (``failed``; the session's later rows go on)."""
        # Rows of its session went unrouted with nobody connected (older than it)?
        was_away = self._is_away(outbound.session_id)
        if outbound.session_id is not None:
            # Gone to no client until broadcast below (no schedule point from there to it):
            # a welcome built meanwhile counts it as still to come (see _history_seq).
            self.starting[outbound.delivery_id] = (outbound.session_id, outbound.seq)
        try:
            await trio.lowlevel.checkpoint()
        finally:
            self.starting.pop(outbound.delivery_id, None)
        if outbound.session_id is None:  # a command answer with no session: not stored
            hub = self.hubs.get(str(outbound.metadata.get("conversation_key")))
            if hub is not None:
                hub.broadcast(notice_frame(outbound))
            return
        conversation = self.conversation_of(outbound.session_id)
        if conversation is None:
            raise LookupError(f"the gateway does not know session {outbound.session_id!r}")
        self.session_keys[outbound.session_id] = conversation.key
        frame = delivery_frame(outbound)
        text = encode(frame)
        size = encoded_size(text)
        if size > MAX_SERVER_FRAME_BYTES:
            raise FrameTooBig(f"frame_too_big: the delivery frame is {size} bytes, over the "
                              f"{MAX_SERVER_FRAME_BYTES} a client takes (JSON escapes quotes, "
                              "backslashes and control characters); send it as a file")
        hub = self.hubs.get(conversation.key)
        if outbound.kind == "progress" and (hub is None or not hub.connections):
            raise StaleProgress("stale_progress: no client connected")
        if was_away and not self.away.marked(conversation.key, outbound.session_id):
            # A hello handed those rows back at the schedule point above (and its client
            # may be connected now): broadcast now, this row would go out before them.
            raise RecipientAway("older rows were handed back: it goes after them",
                                requeue=True)
        # Held (and waited on) until it returns: never dropped under it.
        with self._holding(self.hub(conversation)) as hub:
            self._delivering += 1
            self._quiet = trio.Event() if self._quiet.is_set() else self._quiet
            try:
                # A connection being closed (its frame finishing, up to 2 s) takes nothing and
                # is no client: broadcast's count says whether one took it, else wait for one.
                while not hub.broadcast(frame, delivery_id=outbound.delivery_id, text=text):
                    if self.closed:
                        return
                    if outbound.kind == "progress":  # as for nobody connected, above
                        raise StaleProgress("stale_progress: no client connected")
                    session_id = outbound.session_id
                    held = self.runtime.dispatcher.unheld(session_id) is not None
                    if held or conversation.key not in self._pinned:
                        if not held:  # (held, it goes back to queued: see RecipientAway)
                            self.away.mark(conversation.key, session_id)
                        raise RecipientAway("no client connected: handed back at the "
                                            "conversation's next hello", requeue=held)
                    # A hello is on its way in; said in its welcome's history_seq
                    hub.waiting[outbound.delivery_id] = (outbound.session_id, outbound.seq)
                    await hub.wait_arrival()
                self.sent[outbound.delivery_id] = conversation.key
                self.progressed()
            finally:
                hub.waiting.pop(outbound.delivery_id, None)
                self._delivering -= 1
                if not self._delivering:
                    self._quiet.set()

    def _is_away(self, session_id: str | None) -> bool:
        """Whether rows of *session_id* went ``unrouted`` with nobody connected, not yet
        handed back by a hello (:attr:`away`). Sync."""
        conversation = self.conversation_of(session_id)
        return (conversation is not None and session_id is not None
                and self.away.marked(conversation.key, session_id))

    def on_task_lifecycle(self, event: TaskLifecycleEvent) -> None:
        conversation = self.conversation_of(event.session_id)
        hub = self.hubs.get(conversation.key) if conversation is not None else None
        if hub is not None and hub.connections:
            if event.type == "text_chunk":  # many, small, fast: see Connection.push_chunk
                hub.broadcast_chunk(lifecycle_frame(event))
            else:
                hub.broadcast(lifecycle_frame(event))

    def _may_answer(self, hub: Hub | None) -> bool:
        """Whether a client that may answer (one ``access`` allows: see _gateway_inbound)
        is connected to *hub*'s conversation (not one being closed); else a question fails
        closed at once."""
        return hub is not None and any(conn.alive and self.config.access.allows(conn.client)
                                       for conn in hub.connections)

    async def prompt_user(self, prompt: Prompt) -> PromptAnswer:
        """Ask the clients connected to the session's conversation (the first answer wins);
        ``PromptAnswer(None, "no_interactive_route")`` at once when none may answer."""
        conversation = self.conversation_of(prompt.session_id)
        hub = self.hubs.get(conversation.key) if conversation is not None else None
        if not self._may_answer(hub):
            await trio.lowlevel.checkpoint()
            return PromptAnswer(None, "no_interactive_route")
        key = hub.conversation.key
        return await self.interactions.prompt(prompt, key, partial(self._broadcast, key))

    async def request_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """Ask the connected clients of the session's conversation to approve *request*;
        denied with ``no_interactive_route`` at once when none may answer."""
        conversation = self.conversation_of(request.session_id)
        hub = self.hubs.get(conversation.key) if conversation is not None else None
        if not self._may_answer(hub):
            await trio.lowlevel.checkpoint()
            return ApprovalDecision(False, "no_interactive_route")
        key = hub.conversation.key
        return await self.interactions.approval(request, key, partial(self._broadcast, key))

    # --- serving -----------------------------------------------------------------------------

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[int]:
        """Listen on ``settings.host:port``; yields the port (useful with port 0: a free one
        is picked the first time, the same on every address the host resolves to, and every
        later ``serving()`` of this gateway, such as a restart after a crash, listens on it
        again).

        Connections are served in this context's nursery; leaving it stops listening,
        closes every connection with ``1001`` and waits for them (unacked rows become
        ``unknown``), but not for TCP connections that never sent their websocket upgrade:
        those are closed at once (see :mod:`._gateway_listen`). Raises ``OSError`` when the
        address cannot be bound.
        """
        async with trio.open_nursery() as nursery:
            listener = trio.CancelScope()
            self._handshakes = Handshakes()
            await nursery.start(self._listen, listener, nursery)
            self._listener = listener
            port = self.port
            assert port is not None
            self.in_service = True
            try:
                yield port
            finally:
                self.in_service = False  # a hello admitted from now on is refused (1001)
                listener.cancel(reason="the gateway is stopping")
                self._end_hello_waits()
                for hub in self.hubs.values():
                    for conn in list(hub.connections):
                        conn.kill(CLOSE_GOING_AWAY, "server shutting down")
                nursery.start_soon(self._handshakes.close_rest, nursery.cancel_scope)

    async def _listen(self, listener: trio.CancelScope, handlers: trio.Nursery, *,
                      task_status: trio.TaskStatus[Any] = trio.TASK_STATUS_IGNORED) -> None:
        with listener:
            # Port 0 picks a free port once: serving() again (the serve supervisor restarts a
            # crashed gateway) listens on that same one, where the clients were told it is.
            port = self.settings.port or self.port or 0
            sockets = await open_listeners(port, self.settings.host)
            self.port = int(sockets[0].socket.getsockname()[1])
            server = WebSocketServer(self._handle, self._handshakes.track(sockets),
                                     handler_nursery=handlers, message_queue_size=4,
                                     max_message_size=max(4 * self.settings.max_frame_bytes,
                                                          HELLO_MAX_BYTES),
                                     connect_timeout=_HANDSHAKE_WAIT,
                                     disconnect_timeout=_CLOSE_WAIT)
            await server.run(task_status=task_status)

    def stop_accepting(self) -> None:
        """Stop listening and refuse new messages (``shutting_down``); admitted connections
        stay, those still waiting for their hello are closed ``1001``."""
        self.accepting = False
        if self._listener is not None:
            self._listener.cancel(reason="the gateway stopped accepting")
        self._end_hello_waits()

    def _end_hello_waits(self) -> None:
        """Close the connections still waiting for their hello (``1001``): none of them can
        be admitted now, and waiting ``hello_timeout`` would hold the stop up for nothing."""
        for scope in list(self.hello_waits):
            scope.cancel(reason="the gateway is stopping")

    async def drain(self) -> None:
        """Block until no connected conversation has anything ``queued`` or unacked, except
        acks from clients that will not send them: a conversation whose every connection
        was written all it was sent and has been silent ``_ACK_SILENCE`` seconds
        (:meth:`Connection.silent_for`) holds the drain only for rows not handed to it yet
        (``sending`` rows it was not sent, ``queued`` ones while its session's ack window
        has room). Waiting on for the others held a stop up for its whole grace, and they
        stay durable (``unknown`` once :meth:`aclose` abandons them)."""
        while True:
            busy = False
            for hub in list(self.hubs.values()):
                if not hub.connections:
                    continue
                current = self.directory.cached(hub.conversation)
                sessions = {sid for sid, key in list(self.session_keys.items())
                            if key == hub.conversation.key}
                if current is not None:
                    sessions.add(current)
                silent = all(conn.silent_for(_ACK_SILENCE) for conn in list(hub.connections))
                for session_id in sessions:
                    if await self._waits_on(session_id, silent=silent):
                        busy = True
                        break
                if busy:
                    break
            if not busy:
                return
            progress = self._progress
            with trio.move_on_after(0.2):
                await progress.wait()

    async def _waits_on(self, session_id: str, *, silent: bool) -> bool:
        """Whether :meth:`drain` waits for *session_id*: it has rows ``queued`` or
        ``sending``, and (*silent*: its clients ack nothing) some of them are on their way
        to a client, not only waiting for its acks."""
        if not silent:
            return bool(await self.runtime.stored_deliveries(
                session_id, statuses=("queued", "sending"), limit=1))
        window = self.ack_window
        sending = await self.runtime.stored_deliveries(session_id, statuses=("sending",),
                                                       limit=window)
        if any(row.outbound.delivery_id not in self.sent for row in sending):
            return True  # claimed, not handed to a connection yet
        return len(sending) < window and bool(await self.runtime.stored_deliveries(
            session_id, statuses=("queued",), limit=1))

    async def aclose(self) -> None:
        """After :meth:`serving` ended: unbind every route, release deliveries waiting for a
        client, and turn what is still unacked ``unknown``. Idempotent."""
        self.accepting = False
        self.closed = True
        self.close()  # unbind: what comes next is unrouted, re-queued when a client returns
        for hub in self.hubs.values():
            hub.wake()
        with trio.move_on_after(_CLOSE_WAIT):
            await self._quiet.wait()
        for session_id in list(self.session_keys):
            try:
                await self._abandon(session_id)
            except TidingsError as exc:  # the writer lost it (a crash): the rows stay sending,
                log.warning("event=abandon_failed session=%s error=%s",  # unknown at the
                            field(session_id), field(repr(exc)))  # next start, as after any crash

    # --- one connection ----------------------------------------------------------------------

    async def _handle(self, request: WebSocketRequest) -> None:
        with self._handshakes.handler():  # upgraded: a stop waits for it (bounded)
            await self._serve_one(request)

    async def _serve_one(self, request: WebSocketRequest) -> None:
        remote = _remote(request)
        try:
            ws = await request.accept()
        except (ConnectionClosed, trio.BrokenResourceError, trio.ClosedResourceError):
            log.info("event=connection_lost remote=%s stage=handshake", remote)
            return
        code, reason = 1000, ""
        conn: Connection | None = None
        try:
            # The hello's conversation is pinned (never evicted) from its bind to its join.
            with ExitStack() as pinned:
                admission = await admit(self, ws, pinned)
                if not self.in_service:  # serving() is leaving: its sweep has passed already
                    raise Refused(CLOSE_GOING_AWAY, "server shutting down")
                admission = follow_switch(self, admission)  # sync, as the join
                conn = self._join(ws, admission, remote)
            welcome = self._welcome(admission)
            await conn.run(welcome, lambda c: replay(self, c, admission.plan),
                           lambda c, frame: on_frame(self, c, frame),
                           lambda c, session_id, seq: catch_up(self, c, session_id, seq))
            code, reason = (conn.close_code or 1000), conn.close_reason
        except Refused as refused:
            code, reason = refused.code, refused.reason
            log.info("event=connection_refused remote=%s code=%d reason=%s",
                     remote, code, field(reason))
        except Exception:
            log.exception("event=connection_failed remote=%s", remote)
            code, reason = CLOSE_INTERNAL, "internal error"
        finally:
            with trio.CancelScope(shield=True):
                if conn is not None:
                    with trio.move_on_after(_CLOSE_WAIT):
                        try:
                            await self._leave(conn)
                        except TidingsError as exc:  # e.g. the store closed under us: logged
                            log.warning("event=leave_failed connection=%d error=%s", conn.id,
                                        field(repr(exc)))
                    if conn.torn:  # half a frame went out: a close frame would be garbage
                        await conn.tear()
                # Its own bound: a leave that used its own up (the store busy) left the close
                # handshake none, and the client saw a plain 1000, not its code and reason.
                with trio.move_on_after(_CLOSE_WAIT):
                    await ws.aclose(code, reason)

    def _join(self, ws: WebSocketConnection, admission: Admission, remote: str) -> Connection:
        conversation = admission.conversation
        conn = Connection(ws, self.settings, conversation=conversation,
                          client=admission.hello.client or "client")
        for session_id in (admission.session_id, *(sid for sid, _ in admission.plan)):
            # Not one the directory forgot since the hello bound it (another client's /new
            # meanwhile): nothing of it is in hand, and its entry would never be dropped.
            if self.conversation_of(session_id) == conversation:
                self.session_keys[session_id] = conversation.key
        if admission.plan:  # after_seq: every session reaches it from its start
            conn.catches_up([session_id for session_id, _ in admission.plan])
        self.hub(conversation).add(conn)  # live frames queue from here on, after the replay
        for frame in self.interactions.waiting_in(conversation.key):
            conn.push(frame)
        log.info("event=connection_opened connection=%d remote=%s conversation=%s session=%s "
                 "after_seq=%s", conn.id, remote, conversation.key,
                 field(admission.session_id), admission.hello.after_seq)
        return conn

    def _welcome(self, admission: Admission) -> dict[str, Any]:
        # heartbeat_s and rate are floats on the wire whichever form the config gave them
        # (``heartbeat_s = 20`` too): a typed client decodes README's ``20.0`` as a float.
        return {"type": "welcome", "protocol": PROTOCOL_VERSION,
                "conversation": admission.conversation.chat_id,
                "session_id": admission.session_id, "last_seq": admission.last_seq,
                "heartbeat_s": float(self.settings.heartbeat_s),
                "max_frame_bytes": self.settings.max_frame_bytes,
                "ack_window": self.settings.ack_window,
                "rate": float(self.settings.rate), "burst": self.settings.burst,
                "replay": bool(admission.plan),
                "history_seq": self._history_seq(admission),
                # The store's clock, as a replayed row's created_at: what a client began
                # after (its first welcome's) is history (see _gateway_admit.replay). No later
                # than a send in flight: its row, committed after this, is news.
                "server_time": self.runtime.pipeline.floor_time(),
                # The turns running now: their started went to connections before this one.
                # Read as the connection joins the hub (sync, no checkpoint since): the end of
                # each comes to it as a lifecycle frame.
                "running": self.dispatch.running_message_ids(admission.conversation)}

    def _history_seq(self, admission: Admission) -> int:
        """The welcome's ``history_seq``: the highest seq of its session at or below which no
        row waits for a client, ``last_seq`` when none does. A row waits while ``queued``
        (read by the hello: see ``Admission.first_queued``), claimed by its lane and not yet
        handed to :meth:`deliver` (``Dispatcher.unstarted_seq``: it waited for a hold's end,
        or was written claimed and not taken yet), in :meth:`deliver` before its broadcast
        (``starting``: at its schedule point), or held there for a hello on its way in
        (none connected): the connection is sent it. A row that went ``unrouted`` with
        nobody connected is ``queued`` again by then (the hello handed it back). One in
        flight to another device went out before it: history. Sync, as the connection
        joins."""
        session_id = admission.session_id
        starting = min((seq for in_session, seq in self.starting.values()
                        if in_session == session_id), default=None)
        waiting = [seq for seq in (admission.first_queued,
                                   self.hub(admission.conversation).first_waiting(session_id),
                                   self.runtime.dispatcher.unstarted_seq(session_id), starting)
                   if seq is not None]
        return min([admission.last_seq, *(seq - 1 for seq in waiting)])

    async def _leave(self, conn: Connection) -> None:
        hub = self.hub(conn.conversation)
        hub.remove(conn)
        log.info("event=connection_closed connection=%d conversation=%s code=%s frames=%d",
                 conn.id, conn.conversation.key, conn.close_code or 1000, conn.written)
        if hub.connections:
            await self._abandon_theirs(conn, hub)
            return
        # Held meanwhile, so it stays: a client coming back joins it and stops the loop (were
        # it dropped by another client's leave, the next one would join a new hub this loop
        # does not watch, and have its own unacked rows abandoned under it).
        with self._holding(hub):
            try:
                for session_id, key in list(self.session_keys.items()):
                    if key == conn.conversation.key and not hub.connections:
                        await self._abandon(session_id)
            finally:
                if not hub.connections:
                    self._forget_sent(conn.conversation.key)

    async def _abandon_theirs(self, conn: Connection, hub: Hub) -> None:
        """*conn* left and other connections of its conversation stay: the unacked rows none
        of them was sent (a device that joined after they went out, without ``after_seq``,
        never was) become ``unknown``, as when the last connection leaves. Nobody connected
        could ack them, and left ``sending`` they held the session's ack window (the devices
        that stay got nothing new once it was full) and kept :meth:`drain` waiting."""
        with self._holding(hub):
            for session_id, key in list(self.session_keys.items()):
                if key == conn.conversation.key and hub.connections:
                    keep = {delivery_id for other in hub.connections
                            for delivery_id in other.awaiting_ack}
                    await self._abandon(session_id, keep=keep)

    def _forget_sent(self, key: str) -> None:
        """Nobody is connected to conversation *key*: forget what was sent there and not
        acked. :meth:`_abandon` forgets the lane's unacked rows; this also forgets rows a
        replay sent ``unknown`` (not the lane's), which were otherwise kept for good. A
        later ack of one is looked up in the store, as an ack of any row sent before a
        reconnect is."""
        for delivery_id in [d for d, k in self.sent.items() if k == key]:
            del self.sent[delivery_id]

    async def _abandon(self, session_id: str, *, keep: Collection[str] = ()) -> None:
        for delivery_id in await self.runtime.abandon_unacked(session_id, keep=keep):
            self.sent.pop(delivery_id, None)

    def progressed(self) -> None:
        """Something was delivered or acked: wake :meth:`drain`."""
        self._progress.set()
        self._progress = trio.Event()


def _remote(request: WebSocketRequest) -> str:
    """The peer's address for the log (never raises: the socket may be gone)."""
    try:
        remote = request.remote
    except OSError:
        return "unknown"
    return f"{remote.address}:{remote.port}" if hasattr(remote, "port") else str(remote)
