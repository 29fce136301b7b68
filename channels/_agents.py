"""The agent bridge: what an agent is, what a turn gives it, and the built-in :class:`EchoAgent`.

An agent runs one turn for one inbound message in a session. The channel base builds the
:class:`AgentTurn` (prompt with instructions / boundary / steer note, the raw text, the
runtime's ``ctx.output``) and drives :meth:`Agent.run` inside the turn's cancel scope, so an
agent may be cancelled at any checkpoint and needs no cleanup protocol beyond trio's.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Protocol, final, runtime_checkable

import trio

from tidings.channels._lifecycle import ToolCall
from tidings.errors import ValidationError
from tidings.supervisor._log import field

__all__ = ["AGENT_LOG", "Agent", "AgentTurn", "EchoAgent", "warn_if_returned"]

AGENT_LOG = logging.getLogger("tidings.channels.agent")
"""Warnings about the agent's own mistakes (a value ``run`` returned): a logger of its own,
so ``tidings chat --local``, where agents are tried out, shows them at its quiet default."""


class AgentTurn(Protocol):
    """One turn as an agent sees it; provided by the channel base at run time.

    ``prompt`` is what the agent should answer (channel instructions, boundary note and steer
    note included, as composed for this session); ``text`` is the user's raw message.
    ``output`` is the runtime's ``ctx.output`` for sends beyond the streamed reply.
    """

    @property
    def session_id(self) -> str:
        """The session the turn runs in."""

    @property
    def message_id(self) -> str | None:
        """The platform's id of the user's message, when it gave one."""

    @property
    def prompt(self) -> str:
        """What the agent should answer: instructions, boundary and steer notes included."""

    @property
    def text(self) -> str:
        """The user's raw message, as sent."""

    @property
    def output(self) -> Any:
        """The turn's output SDK (``ctx.output``), for sends beyond the streamed reply."""

    async def send_chunk(self, text: str) -> None:
        """Stream a piece of the reply; the joined chunks become the turn's reply."""

    async def report_tool_call(self, call: ToolCall) -> None:
        """Report a tool call (shown to lifecycle hooks)."""

    # ``timeout`` is the question's answer window (its ``expires_in``: expiry gives None / the
    # runtime's expired answer; questions are not stored), not a deadline for the call: hence
    # the noqa.
    async def prompt_user(self, text: str, *,
                          timeout: float | None = None) -> str | None:  # noqa: ASYNC109
        """Ask the user something in this session; None when unanswered in time."""

    async def request_approval(self, action: str, *, details: Mapping[str, Any] | None = None,
                               timeout: float | None = None) -> Any:  # noqa: ASYNC109
        """Ask the user to approve ``action``; the runtime's answer."""


@runtime_checkable
class Agent(Protocol):
    """Anything with ``async run(turn)``; it may be cancelled at any checkpoint.

    ``run`` returns None when the turn's work is done: the reply is what it streamed with
    ``send_chunk`` (or sent through ``output``). A value it returns is not sent: it is logged
    as a warning (:func:`warn_if_returned`), the turn completes all the same. Raising an
    ``Exception`` fails that turn
    only (``failed``): the session's next turn and every other session go on. A
    ``BaseException`` that is not an ``Exception`` (``KeyboardInterrupt``, ``SystemExit``,
    ``GeneratorExit`` or a subclass of one's own) is not a failure of the turn but a request to
    stop, as everywhere in Python and trio: the turn still ends ``failed``, then it passes
    through the supervision tree (whose child boundary catches only ``Exception``), the runtime
    stops as at its exit (other turns end ``cancelled(shutdown)``, their messages are told
    about at the next start) and ``open_runtime`` raises it, unwrapped.
    """

    async def run(self, turn: AgentTurn) -> None:
        """Do one turn's work: read ``turn.prompt``, stream the reply with
        ``turn.send_chunk``, return None (see the class docstring for failures and
        cancellation)."""
        ...


def warn_if_returned(agent: Any, value: object, *, session_id: str) -> None:
    """Log a warning (``event=agent_returned_a_value``, on :data:`AGENT_LOG`) naming *agent*'s
    class and the type of *value*, unless *value* is None: the value an agent's ``run``
    returned, which nothing sends. ``return answer`` for ``await turn.send_chunk(answer)``
    otherwise completes the turn with no reply and no word about why."""
    if value is None:
        return
    kind = type(agent)
    AGENT_LOG.warning(
        "event=agent_returned_a_value session=%s agent=%s returned=%s hint=%s",
        field(session_id), field(f"{kind.__module__}.{kind.__qualname__}"),
        field(type(value).__name__),
        field("run's return value is not sent: stream the reply with "
              "await turn.send_chunk(text), and return None"))


@final
class EchoAgent:
    """Replies with exactly the prompt it was given, streamed in ``chunk_size`` pieces.

    For a message whose text starts with ``tool:`` it first reports
    ``ToolCall(name="echo_tool", arguments={"input": <rest of the text>}, call_id="echo_tool-1")``.
    So every lifecycle event can be seen without a model. There is a checkpoint before the
    first chunk and after each one, so it can be cancelled mid-stream.

    Raises:
      ValidationError: (field ``chunk_size``) unless ``chunk_size`` is a positive int.
    """

    def __init__(self, chunk_size: int = 16) -> None:
        if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
            raise ValidationError("chunk_size", f"must be a positive int, got {chunk_size!r}")
        self.chunk_size = chunk_size

    def __repr__(self) -> str:
        return f"EchoAgent(chunk_size={self.chunk_size})"

    async def run(self, turn: AgentTurn) -> None:
        """Stream ``turn.prompt`` back in ``chunk_size`` pieces (a ``tool:`` message reports
        its tool call first)."""
        text = turn.text.lstrip()
        if text.startswith("tool:"):
            call = ToolCall(name="echo_tool", arguments={"input": text[len("tool:"):].strip()},
                            call_id="echo_tool-1")
            await turn.report_tool_call(call)
        await trio.lowlevel.checkpoint()
        prompt = turn.prompt
        for start in range(0, len(prompt), self.chunk_size):
            await turn.send_chunk(prompt[start:start + self.chunk_size])
            await trio.lowlevel.checkpoint()
