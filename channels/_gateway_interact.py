"""Prompts and approval requests over the gateway: asked in a conversation, answered once.

A pending question is sent to every connection of its conversation (and again to a client
that connects while it waits). The first valid answer settles it; a repeated answer, an answer
after expiry or after the asking turn was cancelled, or one from another conversation is
refused with an ``error`` frame and never applied. When a question closes every connection
gets ``prompt_closed`` with how: ``answered``, ``expired`` (its time ran out, or a nearer
bound of the asker, see below) or ``cancelled`` (the turn that asked was cancelled: ``/cancel``,
``/clear``, steer, the server's stop). Without a connected client the agent gets the runtime's
fail-closed answer (``no_interactive_route``), as with only clients the channel's ``access``
does not allow, who may not answer (``refused``).
A question whose frame is over ``MAX_SERVER_FRAME_BYTES`` could reach no client (each
connection drops such a frame): it is not asked, and the agent gets ``frame_too_big`` at once
(an empty prompt answer, or a denial) instead of an unseen wait for the whole timeout.

Questions are kept per conversation: the same id asked in two conversations is two questions,
and an id of another conversation is ``unknown_prompt`` whatever became of it there. An id
already waiting in its conversation is refused (:class:`ValidationError`), so no question
replaces another one that can then never be answered. An answer is late once the wait's
deadline on trio's clock has passed (its own expiry, or a nearer bound of the asker such as the
router's or the turn's), even before the waiting task has run: accepted, it would be dropped.
For the same reason an answer is refused ``cancelled`` once the asker's turn is cancelled,
even in the same scheduler tick, before the waiting task has run again (it no longer waits).
An answer that comes before the asker has first reached its wait is taken: it finds it there.
A prompt's answer may be None, the client's "no answer" (``"text": null``): the agent gets
``PromptAnswer(None, "declined")`` at once, as from ``--local``'s end of input, and the question
closes ``answered`` (an approval's "no" is its ``deny``).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable
from typing import Any, Literal

import trio

from tidings.actors import ApprovalDecision, ApprovalRequest, Prompt, PromptAnswer
from tidings.channels._gateway_frames import (
    MAX_SERVER_FRAME_BYTES,
    FrameError,
    approval_request_frame,
    encode,
    encoded_size,
    prompt_frame,
)
from tidings.errors import ValidationError

__all__ = ["TOO_BIG_REASON", "Interactions", "Question"]

Kind = Literal["prompt", "approval"]
Closed = Literal["answered", "expired", "cancelled"]
"""How a question closed: the ``reason`` of its ``prompt_closed`` frame."""
Broadcast = Callable[[dict[str, Any]], None]
"""Sends a frame to every connection of the question's conversation (sync, never blocks)."""
_CLOSED_KEPT = 4096
_TOO_BIG = object()
"""What :meth:`Interactions._ask` returns for a question whose frame no client would take."""
_EXPIRED = object()
"""What :meth:`Interactions._ask` returns for a question not answered in time (None is an
answer: a prompt's "no answer")."""
TOO_BIG_REASON = "frame_too_big"
# Withdrawn: the asker stopped waiting before an answer came. Its turn was cancelled (the
# usual case) or the agent cancelled its own wait: this layer cannot tell the two apart.
_WITHDRAWN = ("{0} was withdrawn (the turn that asked was cancelled, or the agent stopped "
              "waiting); the answer was not applied")


class Question:
    """One pending prompt or approval request."""

    def __init__(self, kind: Kind, question_id: str, key: str, frame: dict[str, Any],
                 expires_at: float, deadline: float) -> None:
        self.kind = kind
        self.id = question_id
        self.key = key  # the conversation it was asked in
        self.frame = frame
        self.expires_at = expires_at
        # On trio's clock: when the wait ends (its own expiry, or the asker's nearer bound,
        # such as the router's or the turn's). An answer from then on would be dropped.
        self.deadline = deadline
        self.answer: Any = None
        self.settled = False
        self.done = trio.Event()
        # The asker has parked on ``done`` (at least once): from then on, no task waiting on
        # it means a cancel unparked the asker. Until then, an answer is one it finds there.
        self.waited = False


class Interactions:
    """The pending questions of one gateway (see the module docstring)."""

    def __init__(self, *, timeout: float, clock: Callable[[], float] = time.time) -> None:
        self.timeout = timeout
        self.clock = clock
        self.pending: dict[tuple[str, str], Question] = {}  # (conversation, id) -> question
        # (conversation, id) -> its kind and how it closed, for refusing late answers by name
        self.closed: collections.OrderedDict[tuple[str, str], tuple[Kind, Closed]] = (
            collections.OrderedDict())

    async def prompt(self, prompt: Prompt, key: str, broadcast: Broadcast) -> PromptAnswer:
        expires_at = self._expiry(prompt.expires_at)
        frame = prompt_frame(prompt.prompt_id, prompt.session_id, prompt.text, expires_at)
        answer = await self._ask("prompt", prompt.prompt_id, key, frame, expires_at,
                                 broadcast)
        if answer is _TOO_BIG:
            return PromptAnswer(None, TOO_BIG_REASON)
        if answer is _EXPIRED:
            return PromptAnswer(None, "expired")
        if answer is None:  # the client's "no answer"
            return PromptAnswer(None, "declined")
        return PromptAnswer(str(answer))

    async def approval(self, request: ApprovalRequest, key: str, broadcast: Broadcast
                       ) -> ApprovalDecision:
        expires_at = self._expiry(request.expires_at)
        frame = approval_request_frame(request.request_id, request.session_id, request.action,
                                       request.details, expires_at)
        decision = await self._ask("approval", request.request_id, key, frame, expires_at,
                                   broadcast)
        if decision is _TOO_BIG:
            return ApprovalDecision(False, TOO_BIG_REASON)
        if decision is _EXPIRED:
            return ApprovalDecision(False, "expired")
        return ApprovalDecision(True) if decision == "allow" else ApprovalDecision(False,
                                                                                   "denied")

    def _expiry(self, expires_at: float | None) -> float:
        """The question's own expiry (longer than ``timeout`` too; ``inf``: it never
        expires), or ``timeout`` from now for one that has none."""
        return self.clock() + self.timeout if expires_at is None else expires_at

    async def _ask(self, kind: Kind, question_id: str, key: str, frame: dict[str, Any],
                   expires_at: float, broadcast: Broadcast) -> Any:
        if (key, question_id) in self.pending:
            field = "prompt_id" if kind == "prompt" else "request_id"
            raise ValidationError(field, f"{question_id[:80]!r} is already waiting for an "
                                         "answer in this conversation")
        if encoded_size(encode(frame)) > MAX_SERVER_FRAME_BYTES:  # Connection.push drops it
            await trio.lowlevel.checkpoint()
            return _TOO_BIG
        deadline = min(trio.current_time() + max(0.0, expires_at - self.clock()),
                       trio.current_effective_deadline())
        question = Question(kind, question_id, key, frame, expires_at, deadline)
        self.pending[key, question_id] = question
        reason: Closed = "cancelled"  # unless the wait ends with an answer or its deadline
        try:
            # Inside: a broadcast that raised (it does not: a full or closed connection is
            # closed or skipped, not raised; but a KeyboardInterrupt may land anywhere) left
            # the question pending for good, its id refused and its frame sent to every
            # client that connects. It now closes as an unanswered question does.
            broadcast(frame)
            with trio.move_on_at(deadline):
                question.waited = True  # no checkpoint until it parks (unless answered)
                await question.done.wait()
                reason = "answered"
                return question.answer
            reason = "expired"
            return _EXPIRED
        finally:
            if reason == "cancelled" and trio.current_time() >= deadline:
                reason = "expired"  # a nearer bound of the asker (the router's, the turn's)
            del self.pending[key, question_id]
            question.settled = True
            self._remember((key, question_id), kind, reason)
            broadcast({"type": "prompt_closed", "id": question_id, "reason": reason})

    def settle(self, kind: Kind, question_id: str, key: str, answer: Any) -> None:
        """Apply a client's answer. Raises :class:`FrameError` (``unknown_prompt``,
        ``already_answered``, ``expired``, ``cancelled``) when it must be refused."""
        field = "prompt_id" if kind == "prompt" else "request_id"  # named in each refusal
        question = self.pending.get((key, question_id))
        if question is None or question.kind != kind:
            closed = self.closed.get((key, question_id)) if question is None else None
            # Only a question of the answer's kind: the other's fate is no answer to it.
            reason = closed[1] if closed is not None and closed[0] == kind else None
            if reason == "answered":
                raise FrameError("already_answered", f"{question_id} was answered already",
                                 field=field)
            if reason == "expired":
                raise FrameError("expired", f"{question_id} expired; the answer was not "
                                            "applied", field=field)
            if reason == "cancelled":
                raise FrameError("cancelled", _WITHDRAWN.format(question_id), field=field)
            raise FrameError("unknown_prompt", f"no pending {kind} {question_id[:80]!r} in this "
                                               "conversation", field=field)
        if question.settled:
            raise FrameError("already_answered", f"{question_id} was answered already",
                             field=field)
        # Past the deadline the wait's cancel is on its way (perhaps not run yet): an answer
        # taken now would be dropped, so it is refused, whatever the wall clock says.
        if self.clock() > question.expires_at or trio.current_time() >= question.deadline:
            raise FrameError("expired", f"{question_id} expired; the answer was not applied",
                             field=field)
        # Its turn was cancelled (the asker's wait was woken with ``Cancelled``, which has not
        # run yet): the answer would reach nobody, so it is refused, never taken and dropped.
        # An asker that has not reached its wait yet (an answer given as the question goes
        # out) is not gone: it finds the answer there.
        if question.waited and not question.done.statistics().tasks_waiting:
            raise FrameError("cancelled", _WITHDRAWN.format(question_id), field=field)
        question.answer = answer
        question.settled = True
        question.done.set()

    def waiting_in(self, key: str) -> list[dict[str, Any]]:
        """The frames of questions still waiting in conversation *key* (for a new client)."""
        return [q.frame for q in self.pending.values() if q.key == key and not q.settled]

    def _remember(self, pair: tuple[str, str], kind: Kind, reason: Closed) -> None:
        self.closed[pair] = (kind, reason)
        self.closed.move_to_end(pair)
        while len(self.closed) > _CLOSED_KEPT:
            self.closed.popitem(last=False)
