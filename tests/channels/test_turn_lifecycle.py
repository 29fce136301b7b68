"""A channel turn's lifecycle through the channel base: order, metadata, reply, failure, hooks."""

from __future__ import annotations

import logging

import attrs
import pytest
import trio

from tidings.channels import (
    ChannelConfig,
    EchoAgent,
    MemoryScope,
    RuntimeIdentity,
    RuntimeMemoryScope,
    ToolCall,
)

from .conftest import GatedAgent, RecordingChannel, rows


class ScriptedAgent:
    """Streams a chunk, reports a tool call, streams another chunk."""

    async def run(self, turn) -> None:
        await turn.send_chunk("Hello, ")
        await turn.report_tool_call(ToolCall(name="search", arguments={"q": "x"}, call_id="1"))
        await turn.send_chunk("world")


class FailingAgent:
    async def run(self, turn) -> None:
        await turn.send_chunk("half an answer")
        raise RuntimeError("the model fell over\x1b[31m")


class OutputOnlyAgent:
    """Sends through ``turn.output`` itself and streams nothing."""

    async def run(self, turn) -> None:
        await turn.output.send_text("sent by the agent")


async def test_default_metadata_comes_from_the_channel_name(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    assert await channel.say("hi", message_id="m1") == "started"
    await channel.wait_events("completed")
    for event in channel.events:
        assert event.identity == RuntimeIdentity(id="channel:ops", display_name="ops")
        assert event.memory_scope == RuntimeMemoryScope(namespace="channel:ops",
                                                        mode="metadata-only")
        assert (event.channel_name, event.chat_id, event.message_id) == ("ops", "c1", "m1")
        assert event.session_id.startswith("session_")


async def test_configured_metadata_is_in_every_event(rt) -> None:
    config = ChannelConfig(name="ops", identity={"id": "bot:ops", "displayName": "Ops Bot",
                                                 "description": "Helps."},
                           memory_scope=MemoryScope(namespace="qwen-tag:ops", mode="shared"))
    channel = RecordingChannel(rt, config)
    await channel.say("tool: x")
    await channel.wait_events("completed")
    assert {event.identity for event in channel.events} == {
        RuntimeIdentity(id="bot:ops", display_name="Ops Bot", description="Helps.")}
    assert {event.memory_scope for event in channel.events} == {
        RuntimeMemoryScope(namespace="qwen-tag:ops", mode="metadata-only")}


async def test_events_come_in_order_and_the_reply_is_one_persisted_message(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=ScriptedAgent())
    await channel.say("go", message_id="m1")
    await channel.wait_events("completed")
    assert channel.types() == ["started", "text_chunk", "tool_call", "text_chunk", "completed"]
    assert [e.chunk for e in channel.events if e.type == "text_chunk"] == ["Hello, ", "world"]
    tool = channel.events[2].tool_call
    assert (tool.name, dict(tool.arguments), tool.call_id) == ("search", {"q": "x"}, "1")
    [reply] = await channel.wait_outbounds(1)
    assert (reply.kind, reply.text, reply.channel) == ("message", "Hello, world", "ops")
    history = await rt.history(reply.session_id, model_context=True)
    assert [(m.role, m.text) for m in history] == [("user", "go"), ("assistant", "Hello, world")]


async def test_completed_is_emitted_once_the_reply_is_durable(rt) -> None:
    seen: list[list[str]] = []

    class Checking(RecordingChannel):
        async def on_task_lifecycle(self, event) -> None:
            if event.type == "completed":
                rows_now = await rt.deliveries(session_id=event.session_id)
                seen.append([row.text for row in rows_now])
            super().on_task_lifecycle(event)

    channel = Checking(rt, ChannelConfig(name="ops"), agent=EchoAgent(chunk_size=2))
    await channel.say("durable")
    await channel.wait_events("completed")
    assert seen == [["durable"]]


async def test_an_agent_that_sends_through_output_gets_no_extra_reply(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=OutputOnlyAgent())
    await channel.say("hi")
    await channel.wait_events("completed")
    await channel.wait_outbounds(1)
    session_id = channel.events[0].session_id
    assert [d.text for d in await rt.deliveries(session_id=session_id)] == ["sent by the agent"]


async def test_an_agent_error_is_failed_with_a_clean_error_and_no_reply(rt, db_path) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=FailingAgent())
    await channel.say("hi")
    await channel.wait_events("failed")
    assert channel.types() == ["started", "text_chunk", "failed"]
    assert channel.events[-1].error == "RuntimeError: the model fell over[31m"
    session_id = channel.events[0].session_id
    assert await rt.deliveries(session_id=session_id) == []
    [(status, error)] = rows(db_path, "SELECT status, error FROM turns")
    assert status == "failed"
    assert "the model fell over" in error


@pytest.mark.parametrize("style", ["sync", "async"])
async def test_a_hook_that_raises_never_breaks_the_turn(rt, style, caplog) -> None:
    class Throwing(RecordingChannel):
        if style == "sync":
            def on_task_lifecycle(self, event) -> None:
                super().on_task_lifecycle(event)
                raise ValueError(f"hook broke on {event.type}")
        else:
            async def on_task_lifecycle(self, event) -> None:
                await trio.lowlevel.checkpoint()
                super().on_task_lifecycle(event)
                raise ValueError(f"hook broke on {event.type}")

    channel = Throwing(rt, ChannelConfig(name="ops"), agent=ScriptedAgent())
    with caplog.at_level(logging.ERROR, logger="tidings.channels"):
        assert await channel.say("go") == "started"
        await channel.wait_events("completed")
        await channel.wait_outbounds(1)
    assert channel.messages() == ["Hello, world"]
    assert "hook broke on started" in caplog.text


async def test_hooks_cannot_change_what_the_next_hook_sees(rt) -> None:
    class Meddling(RecordingChannel):
        def on_task_lifecycle(self, event) -> None:
            super().on_task_lifecycle(event)
            with pytest.raises(attrs.exceptions.FrozenInstanceError):
                event.identity.display_name = "Evil"  # type: ignore[misc]
            if event.type == "tool_call":
                with pytest.raises(TypeError):
                    event.tool_call.arguments["q"] = "changed"  # type: ignore[index]

    channel = Meddling(rt, ChannelConfig(name="ops"), agent=ScriptedAgent())
    await channel.say("go")
    await channel.wait_events("completed")
    assert {event.identity.display_name for event in channel.events} == {"ops"}


async def test_chunks_after_a_cancel_are_neither_emitted_nor_replied(rt) -> None:
    late = trio.Event()

    class Stubborn:
        async def run(self, turn) -> None:
            await turn.send_chunk("before")
            await late.wait()
            with trio.CancelScope(shield=True):  # keeps streaming although cancelled
                await turn.send_chunk("after")

    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=Stubborn())
    await channel.say("go")
    await channel.wait_events("text_chunk")
    await channel.say("/cancel")
    late.set()
    await channel.wait_events("cancelled")
    assert channel.types() == ["started", "text_chunk", "cancelled"]
    assert channel.messages() == []


async def test_a_cancel_after_the_reply_is_durable_is_refused(rt) -> None:
    answers: list[int] = []

    class LateCancel(RecordingChannel):
        def on_task_lifecycle(self, event) -> None:
            if event.type == "completed":
                conversation = self.conversation_of(event.session_id)
                answers.append(self.dispatch.cancel(conversation, "cancel_command"))
            super().on_task_lifecycle(event)

    channel = LateCancel(rt, ChannelConfig(name="ops"), agent=GatedAgent(block=False))
    await channel.say("go")
    await channel.wait_events("completed")
    await channel.wait_idle()
    assert answers == [0]
    assert channel.types() == ["started", "text_chunk", "completed"]
