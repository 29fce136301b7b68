"""Dispatch modes: what a new message does to a session that is busy.

Each session with work has one worker, a task in the runtime's supervision tree that runs the
session's turns one after another, so two turns of one session never run at once.

- ``steer`` (default): cancel the active turn (reason ``steer``), then run the new message
  after it, with the steer note prefixed when the active turn really ended ``cancelled(steer)``.
  Messages that arrive while one is already waiting join it (nothing the user said is lost).
- ``followup``: per-session FIFO; each message is its own turn.
- ``collect``: messages that arrive during a turn are buffered and sent as one turn after it.
"""

from __future__ import annotations

import collections
import logging
from typing import TYPE_CHECKING, Literal

import attrs
import trio

from tidings.channels._directory import Conversation
from tidings.channels._inbound import Inbound
from tidings.channels._turn import ActiveTurn, run_turn

if TYPE_CHECKING:
    from tidings.channels._base import ChannelBase
    from tidings.channels._lifecycle import CancelReason

__all__ = ["COLLECT_SEPARATOR", "Dispatch", "PendingTurn", "SessionState", "Submitted"]

log = logging.getLogger("tidings.channels")

COLLECT_SEPARATOR = "\n\n"
"""Between the texts of messages merged into one turn."""

Submitted = Literal["started", "queued", "merged"]
"""``started``: the session was idle, the turn starts now; ``queued``: it runs after the turn(s)
ahead of it; ``merged``: it joined a waiting turn (``collect``, or ``steer``)."""


@attrs.define
class PendingTurn:
    """A turn waiting to run: one message, or several merged."""

    inbounds: list[Inbound]
    steered: bool = False

    @property
    def text(self) -> str:
        return COLLECT_SEPARATOR.join(inbound.text for inbound in self.inbounds)

    @property
    def message_id(self) -> str | None:
        """The newest message's id (the one the turn answers last)."""
        return self.inbounds[-1].message_id


class SessionState:
    """One session's turns in this channel: the active one and those waiting."""

    __slots__ = ("active", "conversation", "pending", "session_id", "working")

    def __init__(self, session_id: str, conversation: Conversation) -> None:
        self.session_id = session_id
        self.conversation = conversation
        self.active: ActiveTurn | None = None
        self.pending: collections.deque[PendingTurn] = collections.deque()
        self.working = False


class Dispatch:
    """The per-session turn queues of one channel."""

    def __init__(self, channel: ChannelBase) -> None:
        self._channel = channel
        self._states: dict[str, SessionState] = {}
        self._idle = trio.Event()
        self._idle.set()

    def state(self, session_id: str) -> SessionState | None:
        return self._states.get(session_id)

    def turn_running(self, session_id: str) -> bool:
        state = self._states.get(session_id)
        return state is not None and state.active is not None

    def states_of(self, conversation: Conversation) -> list[SessionState]:
        """Every session of *conversation* with work here (after ``/new`` there may be two)."""
        return [state for state in self._states.values()
                if state.conversation.key == conversation.key]

    def submit(self, session_id: str, conversation: Conversation, inbound: Inbound) -> Submitted:
        """Queue *inbound* for the session by the channel's dispatch mode. Never blocks.

        Raises:
          RuntimeClosedError: the runtime is stopping (nothing was queued).
        """
        mode = self._channel.config.dispatch_mode
        state = self._states.get(session_id)
        if state is None:
            state = self._states[session_id] = SessionState(session_id, conversation)
        busy = state.active is not None or bool(state.pending)
        if mode in ("steer", "collect") and state.pending:
            state.pending[-1].inbounds.append(inbound)
            outcome: Submitted = "merged"
        else:
            state.pending.append(PendingTurn([inbound]))
            outcome = "queued" if busy else "started"
        if not state.working:
            self._start_worker(state, outcome)
        if mode == "steer" and state.active is not None:
            state.active.cancel("steer")
        return outcome

    def cancel(self, conversation: Conversation, reason: CancelReason) -> int:
        """Cancel the active turns of *conversation*'s sessions; how many were cancelled."""
        cancelled = 0
        for state in self.states_of(conversation):
            if state.active is not None and state.active.cancel(reason):
                cancelled += 1
        return cancelled

    def drop_pending(self, conversation: Conversation) -> int:
        """Drop the turns still waiting in *conversation*'s sessions; how many were dropped."""
        dropped = 0
        for state in self.states_of(conversation):
            dropped += len(state.pending)
            state.pending.clear()
        return dropped

    async def wait_idle(self) -> None:
        """Block until no session of this channel has an active or waiting turn."""
        while not self._idle.is_set():
            await self._idle.wait()
        await trio.lowlevel.checkpoint()

    def _start_worker(self, state: SessionState, outcome: Submitted) -> None:
        state.working = True
        if self._idle.is_set():
            self._idle = trio.Event()
        name = f"{self._channel.config.name}:{state.session_id}"
        try:
            self._channel.runtime.start_task(name, self._work, state,
                                             on_abandon=lambda: self._worker_ended(state))
        except BaseException:
            state.working = False
            if outcome != "merged":
                state.pending.pop()
            self._forget_if_idle(state)
            raise

    async def _work(self, state: SessionState) -> None:
        tasks = self._channel.runtime.tasks
        try:
            while state.pending and not tasks.stopping:
                emitter = await run_turn(self._channel, state, state.pending.popleft())
                if (emitter.outcome == "cancelled" and emitter.cancel_reason == "steer"
                        and state.pending):
                    state.pending[0].steered = True
        finally:
            self._worker_ended(state)

    def _worker_ended(self, state: SessionState) -> None:
        """The session's worker ended (or never ran: its task failed before it began)."""
        state.working = False
        if state.pending:
            log.warning("event=turns_dropped channel=%s session=%s count=%d "
                        "reason=worker_ended", self._channel.config.name,
                        state.session_id, len(state.pending))
            state.pending.clear()
        self._forget_if_idle(state)

    def _forget_if_idle(self, state: SessionState) -> None:
        if (state.working or state.pending or state.active is not None
                or self._states.get(state.session_id) is not state):
            return
        del self._states[state.session_id]
        if not self._states:
            self._idle.set()
