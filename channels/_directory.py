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

A directory with a *keep_idle* cap keeps at most that many conversations once they are idle:
when it holds more, the least recently used ones that are idle (none of their sessions in use,
nobody holding or waiting for their lock, and *evictable* says so) are evicted, their sessions
unbound and forgotten here. Nothing durable changes: the conversation's next message resolves
its session from the store again, and a row written in its current session meanwhile finds
its route through the channel's router resolver (:meth:`ChannelBase._resolve_route`), so a
server that served 100,000 conversations does not keep each one's session bound until it
restarts (about 1.3 kB each).
"""

from __future__ import annotations

import contextlib
import itertools
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, final

import attrs
import trio

from tidings.channels._config import ChannelConfig
from tidings.channels._inbound import Inbound, inbound_conversation_key

if TYPE_CHECKING:
    from tidings.actors import BindToken
    from tidings.store import Op

__all__ = ["Conversation", "SessionDirectory", "bound_conversation_key", "conversation_for"]

_SCAN = 8
"""How many of the least recently held conversations one hold past the cap looks at (and
evicts, if idle, up to how many the directory holds past the cap): a conversation in use is
moved to the recent end instead, so a crowd of busy ones costs each hold a few looks only,
and the idle ones past the cap go as holds come (none goes while no hold comes)."""


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


def bound_conversation_key(conn: sqlite3.Connection, core_id: str, channel: str,
                           session_id: str) -> str | None:
    """The key of *channel*'s conversation whose current session is *session_id*, or None
    (a store read: ``rt.store.read(bound_conversation_key, ...)``)."""
    row = conn.execute(
        "SELECT conversation_key FROM conversation_bindings "
        "WHERE session_id = ? AND core_id = ? AND channel = ?",
        (session_id, core_id, channel)).fetchone()
    return None if row is None else row[0]


class _KeyedLock:
    """One lock per key, kept only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[trio.Lock, int]] = {}

    def __contains__(self, key: str) -> bool:
        """Whether someone holds or waits for *key*'s lock."""
        return key in self._locks

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
    forgotten (see the module docstring). *keep_idle*: how many conversations are kept before
    the least recently held idle ones are evicted (busy ones count toward it and are never
    evicted; None: all kept; needs *in_use*); *evictable(conversation, session_ids)*: whether
    an idle one may go (None: yes)."""

    def __init__(self, runtime: Any, channel_name: str, route: Any, *,
                 in_use: Callable[[str], bool] | None = None,
                 forgotten: Callable[[Conversation, list[str]], None] | None = None,
                 keep_idle: int | None = None,
                 evictable: Callable[[Conversation, tuple[str, ...]], bool] | None = None,
                 ) -> None:
        self._rt = runtime
        self._name = channel_name
        self._route = route
        self._in_use = in_use
        self._forgotten = forgotten
        self._keep_idle = keep_idle if in_use is not None else None
        self._evictable = evictable
        self._current: dict[str, str] = {}
        self._cleared: dict[str, str] = {}  # conversation key -> the session /clear left
        self._conversations: dict[str, Conversation] = {}
        self._tokens: dict[str, BindToken] = {}
        # conversation key -> its sessions held here, least recently held conversation first
        self._keys: dict[str, tuple[str, ...]] = {}
        self._locks = _KeyedLock()
        self._closed = False
        # Session switches, clears and evictions, counted (see watch): while a watch is open,
        # conversation key -> the count at its last one; the count at each open watch's start
        self._moves = 0
        self._moved: dict[str, int] = {}
        self._watches: dict[int, int] = {}  # start -> how many watches opened then

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
        (checked by the caller), e.g. an older session a reconnecting client still has rows
        of, or the current one of a conversation evicted here (the router resolver,
        ``ChannelBase._resolve_route``). The session cached as current is kept as it is (none
        after an eviction: the next message reads it from the store)."""
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
        self._moved_now(conversation.key)
        old = await self._rt.forget_conversation(self._name, conversation.key, also=also)
        if old is not None:
            self._cleared[conversation.key] = old
            self.attach(conversation, old)
        return old

    @contextlib.contextmanager
    def watch(self) -> Iterator[Callable[[str], bool]]:
        """Around awaits that read a conversation's session from the store (the channel's
        router resolver): yields ``moved(key)``, whether the conversation *key* switched
        session, was cleared or was evicted since the watch opened. :meth:`latest` alone
        cannot tell once an eviction has forgotten the switch. What it keeps goes with the
        last open watch."""
        start = self._moves
        self._watches[start] = self._watches.get(start, 0) + 1
        try:
            yield lambda key: self._moved.get(key, start) > start
        finally:
            left = self._watches.pop(start) - 1
            if left:
                self._watches[start] = left
            if not self._watches:
                self._moved.clear()
            elif start < (oldest := min(self._watches)):  # what no open watch can ask of
                self._moved = {key: n for key, n in self._moved.items() if n > oldest}

    def _moved_now(self, key: str) -> None:
        """Count a session switch, clear or eviction of the conversation *key* (see watch)."""
        self._moves += 1
        if self._watches:
            self._moved[key] = self._moves

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
        is dropped and the next step reads the store instead of acting on a stale one. It
        counts as a move for a resolver watching the conversation (see :meth:`watch`): the
        session it would bind may be the one just left."""
        try:
            yield
        except BaseException:
            self._current.pop(conversation.key, None)
            self._moved_now(conversation.key)
            raise

    def _switch(self, conversation: Conversation, session_id: str) -> None:
        previous = self._current.get(conversation.key)
        self._current[conversation.key] = session_id
        self._cleared.pop(conversation.key, None)
        if previous != session_id:
            self._moved_now(conversation.key)
        self._hold(conversation, session_id)
        self._bind(session_id)
        if previous != session_id:
            self._forget_done(conversation)

    def _hold(self, conversation: Conversation, session_id: str) -> None:
        self._conversations[session_id] = conversation
        sessions = self._keys.pop(conversation.key, ())  # re-inserted: now the most recent
        self._keys[conversation.key] = sessions if session_id in sessions \
            else (*sessions, session_id)
        self._evict_idle(but=conversation.key)

    def _evict_idle(self, *, but: str) -> None:
        """Past the *keep_idle* cap, evict the least recently held idle conversations (see
        the module docstring), never *but* (being held now); one in use is moved to the
        recent end. Sync."""
        if self._keep_idle is None:
            return
        excess = len(self._keys) - self._keep_idle
        if excess <= 0:
            return
        for key in list(itertools.islice(self._keys, _SCAN)):
            if excess <= 0:
                return
            sessions = self._keys[key]
            if key != but and self._idle(key, sessions):
                self._evict(key, sessions)
                excess -= 1
            else:
                self._keys[key] = self._keys.pop(key)

    def _idle(self, key: str, sessions: tuple[str, ...]) -> bool:
        """Whether the conversation *key* may be evicted: nobody holds or waits for its lock,
        none of its *sessions* is in use, and the channel says so (*evictable*)."""
        assert self._in_use is not None
        if key in self._locks or any(self._in_use(sid) for sid in sessions):
            return False
        conversation = self._conversations.get(sessions[0]) if sessions else None
        return (conversation is None or self._evictable is None
                or self._evictable(conversation, sessions))

    def _evict(self, key: str, sessions: tuple[str, ...]) -> None:
        """Forget the conversation *key* here: its sessions unbound, nothing durable."""
        conversation = self._conversations.get(sessions[0]) if sessions else None
        del self._keys[key]
        self._moved_now(key)
        self._current.pop(key, None)
        self._cleared.pop(key, None)
        self._unbind(conversation, list(sessions))

    def _forget_done(self, conversation: Conversation) -> None:
        """Unbind and forget the sessions *conversation* has left that are no longer in use
        (sync, so nothing is written in between); the current one stays."""
        if self._in_use is None:
            return
        current = self._current.get(conversation.key)
        sessions = self._keys.get(conversation.key, ())
        done = [sid for sid in sessions if sid != current and not self._in_use(sid)]
        if done:
            self._keys[conversation.key] = tuple(sid for sid in sessions if sid not in done)
            self._unbind(conversation, done)

    def _unbind(self, conversation: Conversation | None, session_ids: list[str]) -> None:
        """Unbind and forget *session_ids* here, then tell the channel (*forgotten*) they
        went, if their *conversation* is known. Sync."""
        for session_id in session_ids:
            self._conversations.pop(session_id, None)
            token = self._tokens.pop(session_id, None)
            if token is not None:  # a stale token (another route bound it) removes nothing
                self._rt.router.unbind(token)
        if conversation is not None and self._forgotten is not None:
            self._forgotten(conversation, session_ids)

    def _bind(self, session_id: str) -> None:
        if self._closed:
            return
        token = self._tokens.get(session_id)
        binding = self._rt.router.binding(session_id)
        if token is not None and binding is not None and binding.serial == token.serial:
            return
        self._tokens[session_id] = self._rt.router.bind(session_id, self._route)
