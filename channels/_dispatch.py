"""Dispatch modes: what a new message does to a session that is busy.

Each session with work has one worker, a task in the runtime's supervision tree that runs the
session's turns one after another, so two turns of one session never run at once.

- ``steer`` (default): cancel the active turn (reason ``steer``), then run the new message
  after it, with the steer note prefixed when the active turn really ended ``cancelled(steer)``
  after its agent ran (an agent that never saw a request is not told it was cancelled; a steer
  note such a turn carried passes on to the next). Messages that arrive while one is already
  waiting join it (nothing the user said is lost).
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
    """Its prompt gets the steer note: a turn whose agent was working was steered away for
    it (or such a note went to a turn whose agent then never ran)."""

    @property
    def text(self) -> str:
        return COLLECT_SEPARATOR.join(inbound.text for inbound in self.inbounds)

    @property
    def message_id(self) -> str | None:
        """The newest message's id (the one the turn answers last)."""
        return self.inbounds[-1].message_id


class SessionState:
    """One session's turns in this channel: the active one and those waiting."""

    __slots__ = ("active", "conversation", "pending", "session_id", "unseen_turns", "working")

    def __init__(self, session_id: str, conversation: Conversation,
                 unseen_turns: set[str] | None = None) -> None:
        self.session_id = session_id
        self.conversation = conversation
        self.active: ActiveTurn | None = None
        self.pending: collections.deque[PendingTurn] = collections.deque()
        self.working = False
        self.unseen_turns: set[str] = set() if unseen_turns is None else unseen_turns
        """Turns this process began in the session whose agent has not run (the active one
        while it opens; those cancelled or failed while they opened), until an agent runs in
        the session: then all are cleared. Whether a prompt is the session's first leaves them
        out, since the agent never saw their prompts.

        Held in memory only (no column records that an agent ran): such a turn begun by an
        earlier process counts as seen, so a session whose only turns are ones a stopped
        process never got to run (a stop or crash right after a cancel-while-opening) gets no
        instructions. Kept by :class:`Dispatch` while the session is idle."""


class Dispatch:
    """The per-session turn queues of one channel."""

    def __init__(self, channel: ChannelBase) -> None:
        self._channel = channel
        self._states: dict[str, SessionState] = {}
        self._unseen_turns: dict[str, set[str]] = {}
        """:attr:`SessionState.unseen_turns` of idle sessions (their state is forgotten), for
        the session's next state; only non-empty sets: one small entry per session whose
        agent has not run since a turn was cancelled while it opened."""
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
            state = self._states[session_id] = SessionState(
                session_id, conversation, self._unseen_turns.pop(session_id, None))
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
                pending = state.pending.popleft()
                turn = await run_turn(self._channel, state, pending)
                if state.pending and _owes_steer_note(pending, turn):
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
        if state.unseen_turns:
            self._unseen_turns[state.session_id] = state.unseen_turns
        if not self._states:
            self._idle.set()


def _owes_steer_note(pending: PendingTurn, turn: ActiveTurn) -> bool:
    """Whether the turn after *turn* (which ran *pending*) gets the steer note: *turn* was
    steered away while its agent worked on it, or its agent never ran and *pending* carried a
    note (the request that note is about was never said to be cancelled)."""
    if not turn.agent_ran:
        return pending.steered
    return turn.emitter.outcome == "cancelled" and turn.emitter.cancel_reason == "steer"
