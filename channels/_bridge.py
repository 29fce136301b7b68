"""The agent bridge: the :class:`~tidings.channels.AgentTurn` an agent gets for one turn.

Streamed chunks go to the lifecycle hook and are kept for the reply (only while the turn is
streaming: a chunk after a cancel is neither emitted nor kept); tool calls go to the hook;
``output`` is the runtime's ``ctx.output``; prompts and approvals go through the runtime's
session-aware router, the agent's ``timeout`` becoming the runtime's ``expires_in``.
:func:`split_reply` cuts a reply over :data:`~tidings.actors.MAX_TEXT_BYTES` (which the output
SDK refuses) into messages it takes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, final

import trio

from tidings.actors import MAX_TEXT_BYTES, ApprovalDecision, OutputSDK, TurnContext
from tidings.channels._lifecycle import LifecycleEmitter, ToolCall
from tidings.errors import RuntimeClosedError, ValidationError

__all__ = ["BridgeTurn", "split_reply"]

_TOOL_CALL_KEYS = ("name", "arguments", "call_id")
"""The keys of a tool call given as a mapping (:meth:`BridgeTurn.report_tool_call`)."""

_NEAR = MAX_TEXT_BYTES // 4
"""How far back from a cut :func:`split_reply` looks for a line break or a space."""


def split_reply(text: str) -> list[str]:
    """*text* as consecutive non-empty parts of at most :data:`MAX_TEXT_BYTES` of UTF-8 each,
    joined exactly *text*: ``[text]`` when it fits (most replies), ``[]`` when it is empty.

    A part ends after the last line break in its final quarter, else after the last space or
    tab there, else at the last character boundary that fits: never inside a character (a
    byte search for a newline, space or tab cannot land inside one, and a cut is moved back
    off continuation bytes). Text the output SDK refuses as not valid Unicode is still cut
    (``surrogatepass``), so that the send's refusal names it as it does for a short reply.
    """
    if not text:
        return []
    if len(text) * 4 <= MAX_TEXT_BYTES:  # fits whatever its characters: most replies, unencoded
        return [text]
    data = text.encode("utf-8", "surrogatepass")
    parts: list[str] = []
    start = 0
    while len(data) - start > MAX_TEXT_BYTES:
        cut = start + MAX_TEXT_BYTES
        while data[cut] & 0xC0 == 0x80:  # a continuation byte: the cut is inside a character
            cut -= 1
        found = data.rfind(b"\n", cut - _NEAR, cut)
        if found < 0:  # the later of the last space and the last tab
            found = max(data.rfind(b" ", cut - _NEAR, cut), data.rfind(b"\t", cut - _NEAR, cut))
        if found >= 0:
            cut = found + 1
        parts.append(data[start:cut].decode("utf-8", "surrogatepass"))
        start = cut
    parts.append(data[start:].decode("utf-8", "surrogatepass"))
    return parts


@final
class BridgeTurn:
    """One turn as an agent sees it (implements :class:`~tidings.channels.AgentTurn`)."""

    def __init__(self, ctx: TurnContext, emitter: LifecycleEmitter, *, prompt: str, text: str,
                 message_id: str | None) -> None:
        self._ctx = ctx
        self._emitter = emitter
        self._prompt = prompt
        self._text = text
        self._message_id = message_id
        self._chunks: list[str] = []

    def __repr__(self) -> str:
        return f"<BridgeTurn session={self._ctx.session_id} turn={self._ctx.turn_id}>"

    @property
    def session_id(self) -> str:
        return self._ctx.session_id

    @property
    def turn_id(self) -> str:
        return self._ctx.turn_id

    @property
    def message_id(self) -> str | None:
        return self._message_id

    @property
    def prompt(self) -> str:
        """What to answer: instructions, boundary note and steer note as composed."""
        return self._prompt

    @property
    def text(self) -> str:
        """The user's raw message (several, joined, when dispatch mode ``collect`` merged)."""
        return self._text

    @property
    def output(self) -> OutputSDK:
        """The turn's ``ctx.output``, for sends beyond the streamed reply."""
        return self._ctx.output

    @property
    def reply(self) -> str:
        """The chunks streamed so far, joined: the turn's reply."""
        return "".join(self._chunks)

    async def send_chunk(self, text: str) -> None:
        """Stream a piece of the reply. A checkpoint (it may raise ``trio.Cancelled``). A
        piece over ``MAX_TEXT_BYTES`` is emitted as several ``text_chunk`` events.

        Raises:
          TypeError: *text* is not a string.
          RuntimeClosedError: the turn has ended (work the agent left running when it
            returned): the chunk could reach nobody. A chunk after a cancel, while the turn
            still ends, is dropped.
        """
        if not isinstance(text, str):
            raise TypeError(f"send_chunk: text must be a str, got {type(text).__name__}")
        self._check_not_ended("stream")
        if not self._streaming():
            await trio.lowlevel.checkpoint()
            return
        self._chunks.append(text)
        # A hook may forward each chunk (the gateway sends it as a lifecycle frame): one over
        # MAX_TEXT_BYTES is emitted as several, cut as the reply is.
        for part in split_reply(text) or [text]:
            await self._emitter.text_chunk(part)

    async def report_tool_call(self, call: ToolCall | Mapping[str, Any]) -> None:
        """Report a tool call: a :class:`ToolCall` or a mapping with ``name`` and optional
        ``arguments`` / ``call_id``. A checkpoint.

        Raises:
          ValidationError: the call has no name or bad arguments (from :class:`ToolCall`),
            or the mapping has a key a tool call does not (named: ``input``, ``args``).
          TypeError: *call* is neither.
          RuntimeClosedError: the turn has ended (as for :meth:`send_chunk`).
        """
        if isinstance(call, Mapping):  # a missing or None ``arguments`` is empty, as for ToolCall
            for key in call:  # else dropped: a model's tool-use block lost its input and id
                if key not in _TOOL_CALL_KEYS:
                    raise ValidationError(str(key), f"is not a key of a tool call (known: "
                                                    f"{', '.join(_TOOL_CALL_KEYS)})")
            call = ToolCall(name=call.get("name"), arguments=call.get("arguments"),
                            call_id=call.get("call_id"))
        elif not isinstance(call, ToolCall):
            raise TypeError(f"report_tool_call: call must be a ToolCall or a mapping, "
                            f"got {type(call).__name__}")
        self._check_not_ended("report a tool call")
        if not self._streaming():
            await trio.lowlevel.checkpoint()
            return
        await self._emitter.tool_call(call)

    def _streaming(self) -> bool:
        """Whether a chunk or tool call is emitted now: the emitter streams (started, no
        cancel recorded, not ended), and no cancel it has not recorded yet cut the turn: its
        deadline passed (``turn_timeout``, recorded when somebody looks), or the runtime's
        stop cancelled it after the grace (``shutdown``, recorded as the turn ends). Asked
        from a shielded section (an agent's cleanup), no ``Cancelled`` says so."""
        ctx = self._ctx
        return (self._emitter.streaming and ctx.cancel_scope.deadline > trio.current_time()
                and not ctx.runtime.tasks.cancelled)

    def _check_not_ended(self, what: str) -> None:
        """Refuse streaming once the turn has ended, as its ``ctx.output`` refuses a send: work
        the agent left running when it returned would otherwise lose its output unseen."""
        if self._emitter.outcome is not None:
            raise RuntimeClosedError(f"turn {self._ctx.turn_id} has ended; it cannot {what}")

    async def prompt_user(self, text: str, *,
                          timeout: float | None = None) -> str | None:  # noqa: ASYNC109
        """Ask the person on this session's route; the answer, or None when there is none
        (no interactive route, the route failed to ask, declined, or not answered within
        *timeout* seconds)."""
        with _timeout_named():
            answer = await self._ctx.prompt_user(text, expires_in=timeout)
        return answer.text

    async def request_approval(self, action: str, *, details: Mapping[str, Any] | None = None,
                               timeout: float | None = None  # noqa: ASYNC109
                               ) -> ApprovalDecision:
        """Ask to approve *action*; the runtime's decision (fails closed: ``allowed`` is
        False without an interactive route, when the route failed to ask (``reason``
        ``route_failed``), on expiry after *timeout* seconds, or on deny)."""
        with _timeout_named():
            return await self._ctx.request_approval(action, details=details,
                                                    expires_in=timeout)


@contextmanager
def _timeout_named() -> Iterator[None]:
    """A bad *timeout* is refused under the name the agent gave it, not the runtime's
    ``expires_in``."""
    try:
        yield
    except ValidationError as exc:
        if exc.field != "expires_in":
            raise
        raise ValidationError("timeout", exc.reason) from None
