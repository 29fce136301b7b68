"""Task lifecycle events and the emitter: order, one terminal event, reasons, hook failures."""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import attrs
import pytest
import trio

from tidings.channels import (
    CANCEL_REASONS,
    ChannelConfig,
    LifecycleEmitter,
    RuntimeIdentity,
    RuntimeMemoryScope,
    TaskCancelled,
    TaskCompleted,
    TaskFailed,
    TaskLifecycleEvent,
    TaskStarted,
    TaskTextChunk,
    TaskToolCall,
    ToolCall,
)
from tidings.errors import AgentError, ValidationError

OPS = ChannelConfig(name="ops", identity={"display_name": "Ops Bot"},
                    memory_scope={"namespace": "qwen-tag:ops"})


class Stop(BaseException):
    """A BaseException a hook may raise: it must not be swallowed."""


def emitter(hook: Callable[[TaskLifecycleEvent], Any] | None, config: ChannelConfig = OPS,
            **kwargs: Any) -> LifecycleEmitter:
    kwargs.setdefault("message_id", "m1")
    return LifecycleEmitter(hook, config, chat_id="c1", session_id="s1", **kwargs)


def recorder() -> tuple[list[TaskLifecycleEvent], Callable[[TaskLifecycleEvent], None]]:
    seen: list[TaskLifecycleEvent] = []
    return seen, seen.append


async def test_a_turn_reports_started_chunks_tool_calls_then_completed_in_order() -> None:
    seen, hook = recorder()
    em = emitter(hook)
    call = ToolCall(name="search", arguments={"q": "x"}, call_id="t1")
    assert await em.started()
    assert await em.text_chunk("Hel")
    assert await em.tool_call(call)
    assert await em.text_chunk("lo")
    assert await em.completed()
    assert [event.type for event in seen] == ["started", "text_chunk", "tool_call", "text_chunk",
                                              "completed"]
    assert [type(event) for event in seen] == [TaskStarted, TaskTextChunk, TaskToolCall,
                                               TaskTextChunk, TaskCompleted]
    assert seen[1].chunk == "Hel"  # type: ignore[attr-defined]
    assert seen[2].tool_call == call  # type: ignore[attr-defined]
    assert [event.terminal for event in seen] == [False] * 4 + [True]
    assert em.outcome == "completed"


async def test_events_carry_the_channel_metadata() -> None:
    seen, hook = recorder()
    await emitter(hook).started()
    await emitter(hook, ChannelConfig(name="plain"), message_id=None).started()
    configured, default = seen
    assert (configured.channel_name, configured.chat_id, configured.session_id,
            configured.message_id) == ("ops", "c1", "s1", "m1")
    assert configured.identity == RuntimeIdentity("channel:ops", "Ops Bot", None)
    assert configured.memory_scope == RuntimeMemoryScope("qwen-tag:ops", "metadata-only")
    assert default.message_id is None
    assert default.identity == RuntimeIdentity("channel:plain", "plain", None)
    assert default.memory_scope == RuntimeMemoryScope("channel:plain", "metadata-only")


async def test_hooks_cannot_mutate_the_metadata_they_are_given() -> None:
    arguments = {"q": "x", "opts": {"deep": [1, 2]}, "tags": {"a"}}
    call = ToolCall(name="search", arguments=arguments)
    arguments["q"] = "changed"
    arguments["opts"]["deep"].append(3)  # type: ignore[index]
    assert call.arguments["q"] == "x"
    assert call.arguments["opts"]["deep"] == (1, 2)
    assert isinstance(call.arguments, MappingProxyType)
    assert isinstance(call.arguments["opts"], MappingProxyType)
    assert call.arguments["tags"] == frozenset({"a"})

    def mutate(event: TaskLifecycleEvent) -> None:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            event.session_id = "other"  # type: ignore[misc]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            event.identity.display_name = "Evil"  # type: ignore[misc]
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            event.memory_scope.namespace = "other"  # type: ignore[misc]
        if isinstance(event, TaskToolCall):
            with pytest.raises(TypeError):
                event.tool_call.arguments["q"] = "y"  # type: ignore[index]
        mutated.append(event.type)

    mutated: list[str] = []
    em = emitter(mutate)
    await em.started()
    await em.tool_call(call)
    await em.completed()
    assert mutated == ["started", "tool_call", "completed"]
    assert em.identity == RuntimeIdentity("channel:ops", "Ops Bot", None)


@pytest.mark.parametrize(("first", "second"), [
    ("completed", "completed"), ("completed", "cancelled"), ("completed", "failed"),
    ("cancelled", "completed"), ("cancelled", "cancelled"), ("cancelled", "failed"),
    ("failed", "completed"), ("failed", "cancelled"), ("failed", "failed"),
])
async def test_exactly_one_terminal_event_is_emitted(first: str, second: str) -> None:
    seen, hook = recorder()
    em = emitter(hook)
    await em.started()

    async def end(kind: str) -> bool:
        if kind == "cancelled":
            return await em.cancelled("cancel_command")
        if kind == "failed":
            return await em.failed(AgentError("boom"))
        return await em.completed()

    assert await end(first)
    assert not await end(second)
    assert [event.type for event in seen] == ["started", first]
    assert em.outcome == first


async def test_chunks_and_tool_calls_outside_the_running_turn_are_dropped() -> None:
    seen, hook = recorder()
    em = emitter(hook)
    assert not await em.text_chunk("before start")
    assert not await em.tool_call(ToolCall(name="early"))
    await em.started()
    assert not await em.started()
    assert not await em.text_chunk("")
    assert await em.text_chunk("during")
    await em.completed()
    assert not await em.text_chunk("after the end")
    assert not await em.tool_call(ToolCall(name="late"))
    assert [(event.type, getattr(event, "chunk", None)) for event in seen] == [
        ("started", None), ("text_chunk", "during"), ("completed", None)]


async def test_chunks_after_a_cancel_is_recorded_are_not_emitted() -> None:
    seen, hook = recorder()
    em = emitter(hook)
    await em.started()
    assert em.streaming
    assert em.record_cancel("cancel_command")
    assert not em.streaming
    assert not await em.text_chunk("late chunk")
    assert not await em.tool_call(ToolCall(name="late"))
    assert await em.cancelled()
    assert [event.type for event in seen] == ["started", "cancelled"]
    assert seen[-1].reason == "cancel_command"  # type: ignore[attr-defined]


@pytest.mark.parametrize("first", CANCEL_REASONS)
async def test_the_first_recorded_cancel_reason_wins(first: str) -> None:
    seen, hook = recorder()
    em = emitter(hook)
    await em.started()
    other = "timeout" if first != "timeout" else "steer"
    assert em.record_cancel(first)  # type: ignore[arg-type]
    assert not em.record_cancel(other)  # type: ignore[arg-type]
    assert await em.cancelled(other)  # type: ignore[arg-type]
    assert em.cancel_reason == first
    assert seen[-1] == TaskCancelled(reason=first, channel_name="ops", chat_id="c1",  # type: ignore[arg-type]
                                     session_id="s1", message_id="m1", identity=em.identity,
                                     memory_scope=em.memory_scope)


async def test_a_completed_turn_records_no_later_cancel() -> None:
    em = emitter(None)
    await em.started()
    await em.completed()
    assert not em.record_cancel("cancel_command")
    assert em.cancel_reason is None
    assert not await em.cancelled("cancel_command")


async def test_completed_wins_over_a_cancel_that_raced_a_durable_reply() -> None:
    seen, hook = recorder()
    em = emitter(hook)
    await em.started()
    em.record_cancel("timeout")
    assert await em.completed()
    assert [event.type for event in seen] == ["started", "completed"]


async def test_bad_or_missing_reasons_are_rejected() -> None:
    em = emitter(None)
    await em.started()
    with pytest.raises(ValidationError) as info:
        em.record_cancel("because")  # type: ignore[arg-type]
    assert info.value.field == "reason"
    with pytest.raises(ValidationError, match="none was recorded"):
        await em.cancelled()
    with pytest.raises(ValidationError):
        TaskCancelled(reason="nope", channel_name="ops", chat_id="c", session_id="s",  # type: ignore[arg-type]
                      identity=em.identity, memory_scope=em.memory_scope)
    assert em.outcome is None


async def test_failed_errors_are_sanitized_and_capped() -> None:
    seen, hook = recorder()
    em = emitter(hook)
    await em.started()
    await em.failed(AgentError("exit 3\x1b[31m\u202e: " + "x" * 5000))
    error = seen[-1].error  # type: ignore[attr-defined]
    assert error.startswith("AgentError: exit 3[31m: xxx")
    assert len(error) == 1000
    assert error.endswith("\u2026")
    assert isinstance(seen[-1], TaskFailed)


@pytest.mark.parametrize(("error", "text"), [
    (ValueError(), "ValueError"), ("plain text", "plain text"), ("", "unknown error"),
    (RuntimeError("line 1\r\nline 2"), "RuntimeError: line 1\nline 2"),
])
async def test_failed_accepts_exceptions_and_text(error: BaseException | str, text: str) -> None:
    seen, hook = recorder()
    em = emitter(hook)
    await em.failed(error)
    assert seen[-1].error == text  # type: ignore[attr-defined]


@pytest.mark.parametrize("style", ["sync", "async"])
async def test_a_hook_that_raises_is_logged_and_never_breaks_the_turn(
        style: str, caplog: pytest.LogCaptureFixture) -> None:
    calls: list[str] = []

    def sync_hook(event: TaskLifecycleEvent) -> None:
        calls.append(event.type)
        raise RuntimeError(f"hook broke on {event.type}")

    async def async_hook(event: TaskLifecycleEvent) -> None:
        calls.append(event.type)
        await trio.lowlevel.checkpoint()
        raise RuntimeError(f"hook broke on {event.type}")

    em = emitter(sync_hook if style == "sync" else async_hook)
    with caplog.at_level(logging.ERROR, logger="tidings.channels"):
        assert await em.started()
        assert await em.text_chunk("x")
        assert await em.tool_call(ToolCall(name="t"))
        assert await em.completed()
    assert calls == ["started", "text_chunk", "tool_call", "completed"]
    records = [r for r in caplog.records if r.name == "tidings.channels"]
    assert len(records) == 4
    assert all(record.exc_info is not None for record in records)
    assert "hook broke on completed" in caplog.text
    assert "session s1" in records[0].getMessage()


async def test_an_async_hook_result_is_awaited() -> None:
    seen: list[str] = []

    async def hook(event: TaskLifecycleEvent) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(event.type)

    em = emitter(hook)
    await em.started()
    await em.completed()
    assert seen == ["started", "completed"]


async def test_a_hook_base_exception_is_not_swallowed() -> None:
    def hook(event: TaskLifecycleEvent) -> None:
        raise Stop

    with pytest.raises(Stop):
        await emitter(hook).started()


async def test_cancellation_inside_a_hook_propagates(autojump_clock: trio.abc.Clock,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    async def hook(event: TaskLifecycleEvent) -> None:
        await trio.sleep_forever()

    em = emitter(hook)
    with trio.move_on_after(1) as scope:
        await em.started()
    assert scope.cancelled_caught
    assert not caplog.records


async def test_non_terminal_emits_are_checkpoints() -> None:
    seen, hook = recorder()
    em = emitter(hook)
    with trio.CancelScope() as scope:
        scope.cancel()
        await em.started()
    assert scope.cancelled_caught
    assert seen == []


async def test_terminal_events_reach_the_hook_even_when_the_turn_is_being_cancelled() -> None:
    seen: list[str] = []

    async def hook(event: TaskLifecycleEvent) -> None:
        await trio.lowlevel.checkpoint()
        seen.append(event.type)

    em = emitter(hook)
    await em.started()
    with trio.CancelScope() as scope:
        scope.cancel(reason="runtime stopping")
        try:
            await trio.sleep_forever()
        finally:
            assert await em.cancelled("shutdown")
    assert seen == ["started", "cancelled"]
    assert em.cancel_reason == "shutdown"


async def test_a_stuck_terminal_hook_is_given_up_after_the_grace(
        autojump_clock: trio.abc.Clock, caplog: pytest.LogCaptureFixture) -> None:
    async def hook(event: TaskLifecycleEvent) -> None:
        if event.terminal:
            await trio.sleep_forever()

    em = emitter(hook, terminal_grace=2.0)
    await em.started()
    start = trio.current_time()
    with caplog.at_level(logging.WARNING, logger="tidings.channels"):
        assert await em.completed()
    assert trio.current_time() - start == pytest.approx(2.0)
    assert "did not finish the completed event" in caplog.text
    assert em.outcome == "completed"


@pytest.mark.parametrize("grace", [-1.0, float("nan"), "5", None, True])
def test_the_grace_must_be_a_non_negative_number(grace: Any) -> None:
    with pytest.raises(ValidationError) as info:
        emitter(None, terminal_grace=grace)
    assert info.value.field == "terminal_grace"


async def test_a_grace_past_a_float_s_range_is_no_limit() -> None:
    """An int no float holds is seconds >= 0 all the same: no limit, as ``math.inf`` is."""
    seen, hook = recorder()
    em = emitter(hook, terminal_grace=10**400)
    await em.started()
    assert await em.completed()
    assert [event.type for event in seen] == ["started", "completed"]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"name": ""}, "name"), ({"name": None}, "name"),
    ({"name": "t", "arguments": ["x"]}, "arguments"),
])
def test_tool_calls_are_validated(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ValidationError) as info:
        ToolCall(**kwargs)
    assert info.value.field == field
