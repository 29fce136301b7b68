"""Task lifecycle events and the emitter that keeps one turn's lifecycle honest.

A turn emits ``started`` first, then ``text_chunk`` / ``tool_call`` in the order they happen,
then exactly one terminal event: ``completed``, ``cancelled`` (with the first recorded reason)
or ``failed``. Events are frozen and carry only immutable metadata, so a hook cannot change
what the next hook (or the turn) sees. A hook that raises is logged and never breaks the turn.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, Literal, final

import attrs
import trio

from tidings.actors._blocks import frozen_mapping
from tidings.actors._handle import error_message
from tidings.actors._status import check_seconds, seconds_bound
from tidings.actors._turns import CANCEL_REASONS, CancelReason
from tidings.channels._config import ChannelConfig, RuntimeIdentity, RuntimeMemoryScope
from tidings.channels._sanitize import sanitize_text
from tidings.errors import ValidationError

__all__ = [
    "CANCEL_REASONS",
    "ERROR_LIMIT",
    "TERMINAL_GRACE",
    "CancelReason",
    "LifecycleEmitter",
    "LifecycleHook",
    "TaskCancelled",
    "TaskCompleted",
    "TaskFailed",
    "TaskLifecycleEvent",
    "TaskStarted",
    "TaskTextChunk",
    "TaskToolCall",
    "ToolCall",
]

logger = logging.getLogger("tidings.channels")

TERMINAL_GRACE = 5.0
"""Seconds a turn's terminal lifecycle event gets by default (``terminal_grace``), shielded:
a turn stopped by a shutdown still reports, and a hook that hangs is given up on."""

ERROR_LIMIT = 1000
"""Characters kept of a ``failed`` event's error text."""


def _tool_name(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValidationError("name", f"a tool call needs a non-empty name, got {value!r}")
    return value


def _call_id(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise ValidationError("call_id", f"must be a string or None, not {type(value).__name__}")
    return value


@final
@attrs.frozen
class ToolCall:
    """A tool call an agent reports: ``arguments`` is a read-only copy of what was given.

    Raises:
      ValidationError: naming ``name`` (not a non-empty string), ``arguments`` (not a mapping)
        or ``call_id`` (not a string or None).
    """

    name: str = attrs.field(converter=_tool_name)
    arguments: Mapping[str, Any] = attrs.field(
        factory=dict, converter=frozen_mapping("arguments", deep=True))
    call_id: str | None = attrs.field(default=None, converter=_call_id)


def _reason(value: object) -> CancelReason:
    if value not in CANCEL_REASONS:
        raise ValidationError("reason", f"must be one of {', '.join(CANCEL_REASONS)}, "
                                        f"got {value!r}")
    return value  # type: ignore[return-value]


def _error_text(value: object) -> str:
    if isinstance(value, BaseException):
        text = error_message(value)  # a broken __str__ must not lose the event
        value = f"{type(value).__name__}: {text}" if text else type(value).__name__
    return sanitize_text(str(value), limit=ERROR_LIMIT) or "unknown error"


@attrs.frozen(kw_only=True)
class TaskLifecycleEvent:
    """What every lifecycle event carries; ``type`` says which one it is."""

    type: ClassVar[str]
    terminal: ClassVar[bool] = False
    channel_name: str
    chat_id: str
    session_id: str
    identity: RuntimeIdentity
    memory_scope: RuntimeMemoryScope
    message_id: str | None = None


@final
@attrs.frozen(kw_only=True)
class TaskStarted(TaskLifecycleEvent):
    """The turn began: emitted once, before any other event of the turn."""

    type: ClassVar[Literal["started"]] = "started"


@final
@attrs.frozen(kw_only=True)
class TaskTextChunk(TaskLifecycleEvent):
    """A piece of the reply the agent streamed (``chunk``), in order; none after a cancel
    was recorded or the turn ended."""

    type: ClassVar[Literal["text_chunk"]] = "text_chunk"
    chunk: str


@final
@attrs.frozen(kw_only=True)
class TaskToolCall(TaskLifecycleEvent):
    """The agent reported a tool call (``tool_call``), so a channel can show it as it runs."""

    type: ClassVar[Literal["tool_call"]] = "tool_call"
    tool_call: ToolCall


@final
@attrs.frozen(kw_only=True)
class TaskCancelled(TaskLifecycleEvent):
    """Terminal: the turn was cancelled; ``reason`` is the first recorded one, one of
    :data:`CANCEL_REASONS` (``cancel_command``, ``clear``, ``steer``, ``timeout``,
    ``shutdown``)."""

    type: ClassVar[Literal["cancelled"]] = "cancelled"
    terminal: ClassVar[bool] = True
    reason: CancelReason = attrs.field(converter=_reason)


@final
@attrs.frozen(kw_only=True)
class TaskCompleted(TaskLifecycleEvent):
    """Terminal: the agent's run returned; the turn ended normally."""

    type: ClassVar[Literal["completed"]] = "completed"
    terminal: ClassVar[bool] = True


@final
@attrs.frozen(kw_only=True)
class TaskFailed(TaskLifecycleEvent):
    """``error`` is sanitized (no control or bidi characters) and capped to ``ERROR_LIMIT``."""

    type: ClassVar[Literal["failed"]] = "failed"
    terminal: ClassVar[bool] = True
    error: str = attrs.field(converter=_error_text)


LifecycleHook = Callable[[TaskLifecycleEvent], "Awaitable[object] | object"]
"""``on_task_lifecycle``: called with each event; may return an awaitable, which is awaited."""


@final
class LifecycleEmitter:
    """Emits one turn's lifecycle events to a hook and enforces their order.

    - ``started`` once, first; ``text_chunk`` / ``tool_call`` only after it, and never after a
      cancel was recorded or the turn ended (they are dropped and the call returns False).
    - Exactly one terminal event: a second ``completed`` / ``cancelled`` / ``failed`` is
      ignored and returns False.
    - :meth:`record_cancel` keeps the first reason; ``cancelled`` reports it.
    - The hook may be sync or return an awaitable. An ``Exception`` from it is logged (logger
      ``tidings.channels``, with traceback) and swallowed; ``trio.Cancelled`` and other
      ``BaseException`` propagate. Terminal events are delivered shielded from cancellation
      for up to ``terminal_grace`` seconds, so a turn stopped by shutdown still reports.

    Every emitting method is a checkpoint; the non-terminal ones may raise ``trio.Cancelled``.

    Raises:
      ValidationError: naming ``terminal_grace`` when it is not seconds >= 0.
    """

    def __init__(self, hook: LifecycleHook | None, config: ChannelConfig, *, chat_id: str,
                 session_id: str, message_id: str | None = None,
                 terminal_grace: float = TERMINAL_GRACE) -> None:
        check_seconds("terminal_grace", terminal_grace)
        self._hook = hook
        self._grace = seconds_bound(terminal_grace)  # an int no float holds: no limit, as inf
        self._common: dict[str, Any] = {
            "channel_name": config.name, "chat_id": chat_id, "session_id": session_id,
            "message_id": message_id, "identity": config.resolved_identity(),
            "memory_scope": config.resolved_memory_scope(),
        }
        self._started = False
        self._outcome: str | None = None
        self._cancel_reason: CancelReason | None = None

    @property
    def identity(self) -> RuntimeIdentity:
        """The channel's resolved identity, as every event of the turn carries it."""
        return self._common["identity"]  # type: ignore[no-any-return]

    @property
    def memory_scope(self) -> RuntimeMemoryScope:
        """The channel's resolved memory scope, as every event of the turn carries it."""
        return self._common["memory_scope"]  # type: ignore[no-any-return]

    @property
    def message_id(self) -> str | None:
        """The client's message id every event of the turn carries (its newest message's)."""
        return self._common["message_id"]  # type: ignore[no-any-return]

    @property
    def cancel_reason(self) -> CancelReason | None:
        """The first recorded cancel reason, or None."""
        return self._cancel_reason

    @property
    def outcome(self) -> str | None:
        """``completed`` / ``cancelled`` / ``failed`` once the terminal event was emitted."""
        return self._outcome

    @property
    def streaming(self) -> bool:
        """Whether chunks and tool calls are still emitted: started, not cancelled, not ended."""
        return self._started and self._outcome is None and self._cancel_reason is None

    def record_cancel(self, reason: CancelReason) -> bool:
        """Record why the turn is being cancelled, before its scope is cancelled.

        Returns True if this call recorded ``reason``; False if an earlier reason stands (the
        first one wins) or the turn already ended. Never blocks.

        Raises:
          ValidationError: (field ``reason``) for an unknown reason.
        """
        reason = _reason(reason)
        if self._outcome is not None or self._cancel_reason is not None:
            return False
        self._cancel_reason = reason
        return True

    async def started(self) -> bool:
        """Emit ``started`` (only once, and only before anything else)."""
        await trio.lowlevel.checkpoint()
        if self._started or self._outcome is not None:
            return False
        self._started = True
        await self._call(TaskStarted(**self._common))
        return True

    async def text_chunk(self, chunk: str) -> bool:
        """Emit a ``text_chunk``; False (dropped) unless :attr:`streaming`."""
        await trio.lowlevel.checkpoint()
        if not self.streaming or not chunk:
            return False
        await self._call(TaskTextChunk(chunk=chunk, **self._common))
        return True

    async def tool_call(self, call: ToolCall) -> bool:
        """Emit a ``tool_call``; False (dropped) unless :attr:`streaming`."""
        await trio.lowlevel.checkpoint()
        if not self.streaming:
            return False
        await self._call(TaskToolCall(tool_call=call, **self._common))
        return True

    async def completed(self) -> bool:
        """Emit ``completed`` unless the turn already ended.

        A recorded cancel reason does not stop it: a turn whose final reply is already durable
        is completed, whatever raced it. The caller decides which terminal event is true.
        """
        return await self._terminal("completed", lambda: TaskCompleted(**self._common))

    async def cancelled(self, reason: CancelReason | None = None) -> bool:
        """Emit ``cancelled`` with the first recorded reason (``reason`` is recorded first).

        Raises:
          ValidationError: (field ``reason``) if ``reason`` is unknown, or if it is None and
            no reason was ever recorded.
        """
        if reason is not None:
            self.record_cancel(reason)
        if self._cancel_reason is None and self._outcome is None:
            raise ValidationError("reason", "cancelled needs a reason; none was recorded")
        return await self._terminal(
            "cancelled",
            lambda: TaskCancelled(reason=self._cancel_reason, **self._common))

    async def failed(self, error: BaseException | str) -> bool:
        """Emit ``failed`` with ``error`` (an exception or text; sanitized and capped)."""
        return await self._terminal("failed", lambda: TaskFailed(error=error, **self._common))

    async def _terminal(self, outcome: str, build: Callable[[], TaskLifecycleEvent]) -> bool:
        first = self._outcome is None
        if first:
            self._outcome = outcome
        with trio.CancelScope(shield=True):
            await trio.lowlevel.checkpoint()
            if not first:
                return False
            with trio.move_on_after(self._grace) as grace:
                await self._call(build())
        if grace.cancelled_caught:
            logger.warning("on_task_lifecycle hook did not finish the %s event of session %s "
                           "within %ss; gave up on it", outcome,
                           self._common["session_id"], self._grace)
        return True

    async def _call(self, event: TaskLifecycleEvent) -> None:
        if self._hook is None:
            return
        try:
            result = self._hook(event)
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception("on_task_lifecycle hook raised on the %s event of channel %s, "
                             "session %s; the turn goes on", event.type, event.channel_name,
                             event.session_id)
