"""Sessions of a channel: the boundary note once per session (durably), session death, restarts,
racing first messages, history, and the agent bridge's prompts and approvals."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.actors import ApprovalDecision
from tidings.channels import ChannelConfig, ChannelIdentity, EchoAgent, MemoryScope

from .conftest import GatedAgent, RecordingChannel, rows

NOTE_OPS = """Channel identity:
- id: channel:ops
- display name: Ops Bot
- description: Helps the ops group coordinate repository maintenance.

Memory scope:
- namespace: qwen-tag:ops
- mode: metadata-only
- data from other channels must not be shared."""

OPS = ChannelConfig(
    name="ops", instructions="Be brief.",
    identity=ChannelIdentity(id="channel:ops", display_name="Ops Bot",
                             description="Helps the ops group coordinate repository maintenance."),
    memory_scope=MemoryScope(namespace="qwen-tag:ops"))


async def prompts_for(channel: RecordingChannel, agent: GatedAgent, *texts: str) -> list[str]:
    for text in texts:
        await channel.say(text)
        await channel.wait_idle()
    return [turn.prompt for turn in agent.turns]


async def test_the_boundary_note_comes_once_per_session_after_the_instructions(rt) -> None:
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, OPS, agent=agent)
    assert await prompts_for(channel, agent, "hello", "again") == [
        f"Be brief.\n\n{NOTE_OPS}\n\nhello", "again"]


@pytest.mark.parametrize("death", ["/clear", "/new"])
async def test_the_boundary_note_comes_again_after_the_session_dies(rt, death) -> None:
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, OPS, agent=agent)
    prompts = await prompts_for(channel, agent, "one", death, "two", "three")
    assert prompts == [f"Be brief.\n\n{NOTE_OPS}\n\none", f"Be brief.\n\n{NOTE_OPS}\n\ntwo",
                       "three"]
    assert agent.turns[0].session_id != agent.turns[1].session_id


@pytest.mark.parametrize(("config", "first"), [
    (ChannelConfig(name="ops", identity={"display_name": "Ops Bot"}),
     "Channel identity:\n- id: channel:ops\n- display name: Ops Bot\n\nMemory scope:\n"
     "- namespace: channel:ops\n- mode: metadata-only\n"
     "- data from other channels must not be shared.\n\nhi"),
    (ChannelConfig(name="ops", memory_scope={"namespace": "team:ops"}),
     "Channel identity:\n- id: channel:ops\n- display name: ops\n\nMemory scope:\n"
     "- namespace: team:ops\n- mode: metadata-only\n"
     "- data from other channels must not be shared.\n\nhi"),
    (ChannelConfig(name="ops", instructions="Be brief."), "Be brief.\n\nhi"),
    (ChannelConfig(name="ops"), "hi"),
], ids=["identity-only", "memory-only", "instructions-only", "plain"])
async def test_first_prompt_shapes(rt, config, first) -> None:
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, config, agent=agent)
    assert await prompts_for(channel, agent, "hi", "hi") == [first, "hi"]


async def test_a_restart_keeps_the_session_and_does_not_repeat_the_note(db_path,
                                                                      workspace) -> None:
    agent = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, OPS, agent=agent)
        await prompts_for(channel, agent, "before")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, OPS, agent=agent)
        await channel.say("/who")
        await channel.wait_for(lambda: channel.outbounds)
        assert "Session: active" in channel.outbounds[0].text
        prompts = await prompts_for(channel, agent, "after")
    assert prompts == [f"Be brief.\n\n{NOTE_OPS}\n\nbefore", "after"]
    assert agent.turns[0].session_id == agent.turns[1].session_id
    history = rows(db_path, "SELECT role, text FROM messages ORDER BY history_id")
    assert [role for role, _ in history] == ["user", "assistant", "user", "assistant"]
    assert history[2] == ("user", "after")


async def test_concurrent_first_messages_in_one_channel_share_the_session(rt, db_path) -> None:
    agent = GatedAgent(block=False)
    channel = RecordingChannel(rt, ChannelConfig(name="ops", dispatch_mode="followup"),
                               agent=agent)
    async with trio.open_nursery() as nursery:
        for n in range(5):
            nursery.start_soon(channel.say, f"m{n}")
    await channel.wait_idle()
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(1,)]
    assert len(agent.turns) == 5
    assert agent.max_running == 1


async def test_the_channel_is_the_route_of_its_sessions_until_closed(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await channel.say("hello", chat_id="c1", thread_id="t1")
    await channel.wait_idle()
    session_id = channel.events[0].session_id
    assert rt.router.binding(session_id).route is channel
    conversation = channel.conversation_of(session_id)
    assert (conversation.key, conversation.chat_id, conversation.thread_id) == (
        "ops:chat:c1:thread:t1", "c1", "t1")
    channel.close()
    assert rt.router.binding(session_id) is None


async def test_the_agent_can_prompt_and_ask_for_approval_through_the_route(rt) -> None:
    answers: list[object] = []

    class Asking:
        async def run(self, turn) -> None:
            answers.append(await turn.prompt_user("Which branch?", timeout=60))
            answers.append(await turn.request_approval("deploy", details={"env": "prod"}))

    class Interactive(RecordingChannel):
        async def prompt_user(self, prompt) -> str:
            await trio.lowlevel.checkpoint()
            answers.append((prompt.text, prompt.expires_at is not None))
            return "main"

        async def request_approval(self, request) -> str:
            await trio.lowlevel.checkpoint()
            answers.append((request.action, dict(request.details)))
            return "allow"

    channel = Interactive(rt, ChannelConfig(name="ops"), agent=Asking())
    await channel.say("ship it")
    await channel.wait_idle()
    assert answers == [("Which branch?", True), "main", ("deploy", {"env": "prod"}),
                       ApprovalDecision(True)]


async def test_without_an_interactive_route_prompts_fail_closed(rt) -> None:
    answers: list[object] = []

    class Asking:
        async def run(self, turn) -> None:
            answers.append(await turn.prompt_user("Which branch?"))
            answers.append(await turn.request_approval("deploy"))

    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=Asking())
    await channel.say("ship it")
    await channel.wait_idle()
    assert answers == [None, ApprovalDecision(False, "no_interactive_route")]


async def test_a_channel_needs_a_config_and_an_agent(rt) -> None:
    with pytest.raises(tidings.errors.ValidationError) as caught:
        RecordingChannel(rt, {"name": "ops"})
    assert caught.value.field == "config"
    with pytest.raises(tidings.errors.ValidationError) as caught:
        RecordingChannel(rt, ChannelConfig(name="ops"), agent=object())
    assert caught.value.field == "agent"
    with pytest.raises(TypeError):
        await RecordingChannel(rt, ChannelConfig(name="ops")).handle_inbound("hello")


async def test_the_agent_can_be_named_by_import_path_in_the_config(rt) -> None:
    config = ChannelConfig(name="ops", agent="tidings.channels:EchoAgent")
    channel = RecordingChannel(rt, config)
    assert isinstance(channel.agent, EchoAgent)
