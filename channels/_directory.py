"""Which session each conversation of a channel is in, and the channel's live route bindings.

The durable truth is the runtime's conversation binding (``(core_id, channel, conversation_key)
-> session_id``); this directory caches it, binds the channel as the live route of every
session it resolves (only once the final session is known), and rebinds on ``/new``,
``/resume`` and session switches. Session-changing steps of one conversation are serialized
by a per-conversation lock, so ``/clear`` cannot slip between a message's resolve and its
dispatch.

A session the conversation has left (``/new``, ``/resume`` of another, the first message
after ``/clear``) stays bound while the channel says it is in use (a turn of it runs or
waits, or the runtime still has rows of it queued, unacked or being sent); once it is not,
the next session switch of the conversation unbinds it and forgets it here, so a server
that runs for weeks keeps no binding per session it ever served. A row written in it later
finds no route (``unrouted``) and is handed back when the conversation next speaks
(:meth:`ChannelBase._hand_back`); ``/resume`` binds it again.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, final

import attrs
import trio

from tidings.channels._config import ChannelConfig
from tidings.channels._inbound import Inbound, inbound_conversation_key

if TYPE_CHECKING:
    from tidings.actors import BindToken
    from tidings.store import Op

__all__ = ["Conversation", "SessionDirectory", "conversation_for"]


@final
@attrs.frozen
class Conversation:
    """Where a conversation lives on the platform: its key, chat, thread and (session scope
    ``sender``) sender. An adapter's ``deliver`` finds it with ``channel.conversation_of``."""

    key: str
    chat_id: str
    thread_id: str | None = None
    sender_id: str | None = None

    def as_metadata(self) -> dict[str, str]:
        """The platform address as outbound metadata (for answers that have no session)."""
        data = {"conversation_key": self.key, "chat_id": self.chat_id}
        if self.thread_id is not None:
            data["thread_id"] = self.thread_id
        if self.sender_id is not None:
            data["sender_id"] = self.sender_id
        return data


def conversation_for(config: ChannelConfig, inbound: Inbound) -> Conversation:
    """The conversation *inbound* belongs to, by the channel's session scope."""
    key = inbound_conversation_key(config, inbound)
    if config.session_scope == "sender":
        return Conversation(key, inbound.chat_id, sender_id=inbound.sender_id)
    return Conversation(key, inbound.chat_id, thread_id=inbound.thread_id)


class _KeyedLock:
    """One lock per key, kept only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[trio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (None, 0))
        if lock is None:
            lock = trio.Lock()
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


class SessionDirectory:
    """Conversation -> session for one channel, and its live route bindings.

    *in_use(session_id)* says whether a session the conversation has left must stay bound;
    without it, every session stays bound until :meth:`close`. *forgotten(conversation,
    session_ids)* is called (sync) after those sessions of the conversation were unbound and
    forgotten (see the module docstring)."""

    def __init__(self, runtime: Any, channel_name: str, route: Any, *,
                 in_use: Callable[[str], bool] | None = None,
                 forgotten: Callable[[Conversation, list[str]], None] | None = None) -> None:
        self._rt = runtime
        self._name = channel_name
        self._route = route
        self._in_use = in_use
        self._forgotten = forgotten
        self._current: dict[str, str] = {}
        self._cleared: dict[str, str] = {}  # conversation key -> the session /clear left
        self._conversations: dict[str, Conversation] = {}
        self._tokens: dict[str, BindToken] = {}
        self._keys: dict[str, set[str]] = {}  # conversation key -> its sessions held here
        self._locks = _KeyedLock()
        self._closed = False

    def lock(self, conversation: Conversation) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold the conversation's lock (session-changing steps run under it)."""
        return self._locks.hold(conversation.key)

    def conversation_of(self, session_id: str | None) -> Conversation | None:
        """The conversation that owns *session_id*, if this channel has seen it."""
        return None if session_id is None else self._conversations.get(session_id)

    def sessions(self) -> list[str]:
        """Every session this directory holds: bound, and not yet forgotten."""
        return list(self._conversations)

    def cached(self, conversation: Conversation) -> str | None:
        """The conversation's session as last seen here (no store access)."""
        return self._current.get(conversation.key)

    def latest(self, conversation: Conversation) -> str | None:
        """The conversation's session as last seen here or, from a ``/clear`` until its next
        session, the one it cleared: where its newest rows are (no store access)."""
        return self._current.get(conversation.key) or self._cleared.get(conversation.key)

    async def resolve(self, conversation: Conversation) -> tuple[str, bool]:
        """The conversation's session, created if it has none; the channel is bound as its
        route. Returns ``(session_id, created)``."""
        session_id = self._current.get(conversation.key)
        created = False
        if session_id is None:
            session_id, created = await self._rt.resolve_conversation(self._name,
                                                                      conversation.key)
        self._switch(conversation, session_id)
        return session_id, created

    async def lookup(self, conversation: Conversation) -> str | None:
        """The conversation's session, or None; never creates one (``/who``, ``/status``).

        When nothing is cached, the store is read under the conversation's lock (so the
        caller must not hold it): a ``/new``, ``/resume`` or ``/clear`` committing meanwhile
        would otherwise be overwritten in the cache by the older session read before it.
        """
        session_id = self._current.get(conversation.key)
        if session_id is None:
            async with self.lock(conversation):
                session_id = self._current.get(conversation.key)
                if session_id is None:
                    session_id = await self._rt.conversation_session(self._name,
                                                                     conversation.key)
                    if session_id is None:
                        return None
        self._switch(conversation, session_id)
        return session_id

    async def new(self, conversation: Conversation, *, also: Sequence[Op] = ()) -> str:
        """``/new``: a fresh session for the conversation, bound as its live route. *also*,
        here and in :meth:`resume` and :meth:`forget`: store ops written in the transaction
        of the durable change (the command's message id)."""
        with self._uncached_unless_done(conversation):
            session_id = await self._rt.new_conversation_session(self._name, conversation.key,
                                                                 also=also)
        self._switch(conversation, session_id)
        return session_id

    async def resume(self, conversation: Conversation, session_id: str, *,
                     also: Sequence[Op] = ()) -> None:
        """``/resume``: rebind durably (ownership is checked by the runtime), then live."""
        with self._uncached_unless_done(conversation):
            await self._rt.resume_conversation(self._name, conversation.key, session_id,
                                               also=also)
        self._switch(conversation, session_id)

    def attach(self, conversation: Conversation, session_id: str) -> None:
        """Bind the channel as the live route of *session_id*, a session the conversation owns
        (checked by the caller) that is not its current one, e.g. an older session a
        reconnecting client still has rows of. The conversation's current session is kept."""
        self._hold(conversation, session_id)
        self._bind(session_id)

    async def forget(self, conversation: Conversation, *,
                     also: Sequence[Op] = ()) -> str | None:
        """``/clear``: forget the conversation's session durably; return its id, if any.

        The old session stays bound to the channel (is bound, if this process had not
        resolved it yet: ``/clear`` as the first command after a restart), so what it already
        queued, and the answer to ``/clear`` itself, still reach the chat.
        """
        self._current.pop(conversation.key, None)
        old = await self._rt.forget_conversation(self._name, conversation.key, also=also)
        if old is not None:
            self._cleared[conversation.key] = old
            self.attach(conversation, old)
        return old

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called: nothing is bound any more."""
        return self._closed

    def close(self) -> None:
        """Unbind every route this directory bound (stale tokens are ignored), for good: a
        step still in hand (a message that came before) binds nothing after it, else the
        closed channel would take its sessions back from the one that replaced it."""
        self._closed = True
        for token in self._tokens.values():
            self._rt.router.unbind(token)
        self._tokens.clear()

    @contextlib.contextmanager
    def _uncached_unless_done(self, conversation: Conversation) -> Iterator[None]:
        """Around a durable rebind: if it raises (the caller was cancelled while the write was
        in flight, or it failed), the rebind may still have committed, so the cached session
        is dropped and the next step reads the store instead of acting on a stale one."""
        try:
            yield
        except BaseException:
            self._current.pop(conversation.key, None)
            raise

    def _switch(self, conversation: Conversation, session_id: str) -> None:
        previous = self._current.get(conversation.key)
        self._current[conversation.key] = session_id
        self._cleared.pop(conversation.key, None)
        self._hold(conversation, session_id)
        self._bind(session_id)
        if previous != session_id:
            self._forget_done(conversation)

    def _hold(self, conversation: Conversation, session_id: str) -> None:
        self._conversations[session_id] = conversation
        self._keys.setdefault(conversation.key, set()).add(session_id)

    def _forget_done(self, conversation: Conversation) -> None:
        """Unbind and forget the sessions *conversation* has left that are no longer in use
        (sync, so nothing is written in between); the current one stays."""
        if self._in_use is None:
            return
        current = self._current.get(conversation.key)
        sessions = self._keys.get(conversation.key, set())
        done = [sid for sid in sessions if sid != current and not self._in_use(sid)]
        for session_id in done:
            sessions.discard(session_id)
            self._conversations.pop(session_id, None)
            token = self._tokens.pop(session_id, None)
            if token is not None:  # a stale token (another route bound it) removes nothing
                self._rt.router.unbind(token)
        if done and self._forgotten is not None:
            self._forgotten(conversation, done)

    def _bind(self, session_id: str) -> None:
        if self._closed:
            return
        token = self._tokens.get(session_id)
        binding = self._rt.router.binding(session_id)
        if token is not None and binding is not None and binding.serial == token.serial:
            return
        self._tokens[session_id] = self._rt.router.bind(session_id, self._route)
