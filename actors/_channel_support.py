"""The runtime's public methods for channels: conversations, turn tasks, notices, user history.

A mixin of :class:`~tidings.actors.Runtime` (kept here so the runtime module stays small); each
method is a thin front for :mod:`._conversations`, :mod:`._tasks` or :mod:`._session_io`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tidings.actors import _conversations, _held, _session_io
from tidings.actors._handle import DeliveryHandle

if TYPE_CHECKING:
    from tidings.actors._runtime import Runtime
    from tidings.actors._tasks import TaskRunner
    from tidings.store import Op

__all__ = ["ChannelSupport"]


class ChannelSupport:
    """Conversations, turn tasks, notices and user history (see each method)."""

    tasks: TaskRunner

    # --- conversations -------------------------------------------------------------------------

    async def resolve_conversation(self, channel: str, conversation_key: str
                                   ) -> tuple[str, bool]:
        """The session of ``(core_id, channel, conversation_key)`` and whether it was created
        now. The first message creates session and binding in one transaction; two racing
        first messages end in one session. Raises :class:`ValidationError` naming
        ``channel`` or ``conversation_key`` unless it is a non-empty string of valid Unicode
        of at most ``MAX_ID_CHARS`` (channel) or ``MAX_CONVERSATION_KEY_CHARS`` (8192, key)
        characters (so does ``new_conversation_session``; the lookups take any length, as
        does this call for a conversation bound already: earlier versions stored longer
        ones), :class:`RuntimeClosedError` when stopping."""
        return await _conversations.resolve(self._rt, channel, conversation_key)

    async def conversation_session(self, channel: str, conversation_key: str) -> str | None:
        """The session the conversation is bound to now, or None; never creates one."""
        return await _conversations.conversation_session(self._rt, channel, conversation_key)

    async def new_conversation_session(self, channel: str, conversation_key: str, *,
                                       also: Sequence[Op] = ()) -> str:
        """``/new``: a fresh session owned by the conversation, which is rebound to it. The
        previous session is left as it is (resumable).

        *also*, here and in :meth:`resume_conversation` and :meth:`forget_conversation`:
        a list of store ops written in the same transaction as the change (a channel's record
        of the command's message id, so a crash keeps both or neither); anything else is a
        :class:`ValidationError` naming ``also``, before anything is written."""
        return await _conversations.new_session(self._rt, channel, conversation_key,
                                                also=also)

    async def resume_conversation(self, channel: str, conversation_key: str,
                                  session_id: str, *, also: Sequence[Op] = ()) -> None:
        """``/resume``: rebind the conversation to *session_id*, which it must own (same core,
        channel and conversation key) and which was not cleared. Raises
        :class:`SessionNotFoundError` otherwise (one message for missing and foreign ids;
        :class:`SessionClosedError`, a subclass, for a cleared one; *also* is written all
        the same)."""
        await _conversations.resume(self._rt, channel, conversation_key, session_id,
                                    also=also)

    async def forget_conversation(self, channel: str, conversation_key: str, *,
                                  also: Sequence[Op] = ()) -> str | None:
        """``/clear``: drop the binding and close the session; return its id (None if the
        conversation had none). The next message starts a new session."""
        return await _conversations.forget(self._rt, channel, conversation_key, also=also)

    # --- tasks ---------------------------------------------------------------------------------

    def start_task(self, name: str, async_fn: Callable[..., Awaitable[object]],
                   *args: Any, on_abandon: Callable[[], object] | None = None) -> str:
        """Run ``async_fn(*args)`` in the runtime's supervision tree (a temporary child of the
        ``tasks`` supervisor); return its unique child name. Never blocks.

        At runtime exit a running task gets ``grace`` seconds, then is cancelled with the trio
        reason ``shutdown``. If the task ends without ever calling ``async_fn`` (it failed at
        child start, or its supervisor went away first), ``on_abandon()`` is called instead;
        a task it starts is taken even while the runtime stops, and the stop waits for it, or
        while the ``tasks`` supervisor is restarted, and the next one runs it (the stop, if
        none comes). Raises :class:`RuntimeClosedError` when the runtime is stopping, or the
        ``tasks`` supervisor restarting (but from such an ``on_abandon``).
        """
        return self.tasks.start(name, async_fn, *args, on_abandon=on_abandon)

    # --- writing into a session without a turn -------------------------------------------------

    async def notify(self, session_id: str, text: str, *, kind: str = "notice",
                     metadata: Mapping[str, Any] | None = None,
                     settles: Iterable[str] = ()) -> DeliveryHandle:
        """Send *text* into the session as a transient notice (``kind="progress"`` also
        works) through the outbox, owned by no turn; returns once the intent is durable.
        *settles* names held messages (:meth:`hold_inbound`) the notice tells about: they
        are released in the same commit (not by a progress note, which may be dropped as
        stale: refused naming ``settles``)."""
        return await _session_io.notify(self._rt, session_id, text, kind=kind,
                                         metadata=metadata, settles=settles)

    # --- accepted messages held until dealt with -----------------------------------------------

    async def hold_inbound(self, session_id: str, *, notice: str, message_id: str | None = None,
                           channel: str | None = None, inbound_id: str | None = None) -> str:
        """Hold a message the channel accepted for *session_id* until it is dealt with; return
        its inbound id (*inbound_id* if given: a caller that must name the hold before it is
        written) once the hold is durable. The write reaches the store's writer before this
        call's first checkpoint. Release it with the turn that answers it
        (``open_turn(inbound_ids=[...])``), the notice that tells about it
        (``notify(settles=[...])``) or :meth:`release_inbound`. If the process stops first
        (a crash, or a stop that cut its turn), recovery sends *notice* into the session,
        once (metadata ``unanswered: true`` and ``message_ids``). A session that does not
        exist raises :class:`SessionNotFoundError`, and one that was cleared
        (:meth:`forget_conversation`) :class:`SessionClosedError`, a subclass (nothing is
        held: recovery tells a cleared session nothing, so it could never be told)."""
        return await _held.hold(self._rt, session_id, notice=notice, message_id=message_id,
                                channel=channel, inbound_id=inbound_id)

    async def release_inbound(self, inbound_ids: Iterable[str]) -> None:
        """Release held messages that were dealt with otherwise (``/clear`` dropped them);
        ids not held are ignored."""
        await _held.release(self._rt, inbound_ids)

    async def record_user_message(self, session_id: str, text: str, *,
                                  turn_id: str | None = None) -> str:
        """Append the user's *text* to the session's history (role ``user``, ``persist``);
        return its history message id."""
        return await _session_io.record_user_message(self._rt, session_id, text,
                                                     turn_id=turn_id)

    async def record_user_messages(self, session_id: str, texts: Iterable[str], *,
                                   turn_id: str | None = None) -> list[str]:
        """:meth:`record_user_message` of each of *texts*, in one commit (all or none: the
        messages merged into one turn); return their history message ids."""
        return await _session_io.record_user_messages(self._rt, session_id, texts,
                                                      turn_id=turn_id)

    async def session_has_turns(self, session_id: str, *,
                                excluding: Iterable[str] = ()) -> bool:
        """Whether a turn other than those in *excluding* was ever begun in the session (read
        from the database, so it holds across restarts). A channel excludes the turns it
        began whose agent never ran: their rows cannot tell that apart."""
        return await _session_io.has_turns(self._rt, session_id, excluding=excluding)

    @property
    def _rt(self) -> Runtime:
        return self  # type: ignore[return-value]
