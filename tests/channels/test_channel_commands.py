"""Commands through the channel base: answered at once, no session created when none is needed,
answers through the outbox in a session, never an absolute path, /new and /resume ownership."""

from __future__ import annotations

import re

import pytest

from tidings.channels import REFUSAL, AccessPolicy, ChannelConfig, ChannelIdentity, MemoryScope

from .conftest import GatedAgent, RecordingChannel, rows

ABSOLUTE_PATH = re.compile(r"(^|[\s(:'\"])/[^\s/]+/")


def no_absolute_path(text: str, workspace) -> None:
    assert str(workspace) not in text
    assert not ABSOLUTE_PATH.search(text), text


@pytest.mark.parametrize("command", ["/who", "/status", "/help"])
async def test_a_command_before_any_message_creates_no_session(rt, db_path, command) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    assert await channel.say(command, chat_id="c7", thread_id="t1") == "command"
    [answer] = channel.outbounds  # delivered directly, before handle_inbound returned
    assert (answer.session_id, answer.kind, answer.channel) == (None, "notice", "ops")
    assert dict(answer.metadata) == {"conversation_key": "ops:chat:c7:thread:t1",
                                     "chat_id": "c7", "thread_id": "t1",
                                     "command": command[1:]}
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


async def test_who_and_status_show_the_metadata_and_no_absolute_path(rt, workspace) -> None:
    config = ChannelConfig(name="ops", identity=ChannelIdentity(id="bot:ops",
                                                                display_name="Ops Bot"),
                           memory_scope=MemoryScope(namespace="qwen-tag:ops"),
                           access=["u1"])
    channel = RecordingChannel(rt, config)
    await channel.say("/who")
    await channel.say("/status")
    who, status = (o.text for o in channel.outbounds)
    assert who.splitlines() == ["Channel: ops", "Display name: Ops Bot",
                                "Memory namespace: qwen-tag:ops",
                                f"Workspace: {workspace.name}", "Session: none"]
    assert "Identity id: bot:ops" in status
    assert "Memory mode: metadata-only" in status
    assert "Access: allowlist" in status
    assert "Session: none" in status
    assert "u1" not in status  # the allowlist's members are never shown
    for text in (who, status):
        no_absolute_path(text, workspace)


async def test_commands_in_a_session_answer_through_the_outbox(rt, workspace) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=agent)
    await channel.say("work")
    await agent.wait_turns(1)
    session_id = agent.turns[0].session_id
    for command in ("/status", "/who", "/help"):
        assert await channel.say(command) == "command"  # at once, not behind the turn
    await channel.wait_for(lambda: len(channel.notices()) == 3)
    status, who, _ = channel.notices()
    assert f"Session: active, running a request (id {session_id})" in status
    assert "Session: active" in who
    notices = [d for d in await rt.deliveries(session_id=session_id) if d.kind == "notice"]
    assert [(d.text, d.owner_turn_id) for d in notices] == [(o.text, None)
                                                           for o in channel.outbounds]
    assert {o.session_id for o in channel.outbounds} == {session_id}
    assert [o.metadata["command"] for o in channel.outbounds] == ["status", "who", "help"]
    for text in channel.notices():
        no_absolute_path(text, workspace)
    agent.release()
    await channel.wait_idle()
    assert channel.types()[-1] == "completed"


async def test_an_unknown_slash_command_goes_to_the_agent(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    assert await channel.say("/deploy now") == "started"
    await channel.wait_for(lambda: channel.messages())
    assert channel.messages() == ["/deploy now"]


async def test_a_sender_not_on_the_allowlist_is_refused_and_nothing_is_created(
        rt, db_path) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops", access=AccessPolicy.allow("u1")))
    for text in ("hello", "/who", "/clear"):
        assert await channel.say(text, sender_id="mallory") == "refused"
    assert [o.text for o in channel.outbounds] == [REFUSAL] * 3
    assert {o.session_id for o in channel.outbounds} == {None}
    assert channel.outbounds[0].metadata["refused"] is True
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(0,)]
    assert channel.events == []
    assert await channel.say("hello", sender_id="u1") == "started"


@pytest.mark.parametrize("text", ["  \n", "\u200b", "\ufeff", " \u200d\u2060 ", "\u200e\n"])
async def test_a_blank_message_is_ignored(rt, db_path, text) -> None:
    """Blank as the commands see it: whitespace and invisible format characters (a zero
    width space, a BOM, a word joiner, a bidi mark). A message of only those started a turn
    whose user message showed nothing, though ``/clear`` wrapped in them is a command."""
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    assert await channel.say(text) == "ignored"
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(0,)]


async def test_new_starts_a_fresh_session_and_leaves_the_running_turn_alone(rt) -> None:
    agent = GatedAgent()
    channel = RecordingChannel(rt, ChannelConfig(name="ops", instructions="Be brief."),
                               agent=agent)
    await channel.say("long job")
    await agent.wait_turns(1)
    old = agent.turns[0].session_id
    assert await channel.say("/new") == "command"
    assert [e.type for e in channel.events if e.terminal] == []  # nothing was cancelled
    await channel.say("fresh")
    await agent.wait_turns(2)
    new = agent.turns[1].session_id
    assert new != old
    assert agent.turns[1].prompt == "Be brief.\n\nfresh"  # first prompt of the new session
    agent.release()
    await channel.wait_idle()
    assert [e.type for e in channel.events if e.terminal] == ["completed", "completed"]
    assert channel.outbounds[0].session_id == new  # "Started a new session." went to it
    assert channel.outbounds[0].text == "Started a new session."


async def test_resume_switches_back_to_a_session_the_conversation_owns(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await channel.say("in the first session")
    await channel.wait_idle()
    first = channel.events[0].session_id
    await channel.say("/new")
    await channel.say(f"/resume {first}")
    await channel.say("back again")
    await channel.wait_idle()
    assert channel.events[-1].session_id == first
    await channel.wait_for(lambda: "Resumed session" in " ".join(channel.notices()))
    resumed = [o for o in channel.outbounds if o.text.startswith("Resumed")]
    assert resumed[0].session_id == first


async def test_resume_refuses_sessions_of_other_conversations_without_echoing_input(
        rt, workspace) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await channel.say("mine", chat_id="c1")
    await channel.say("theirs", chat_id="c2")
    await channel.wait_idle()
    by_chat = {e.chat_id: e.session_id for e in channel.events if e.type == "started"}
    for target in (by_chat["c2"], "session_nope", "/etc/passwd"):
        await channel.say(f"/resume {target}", chat_id="c1")
    await channel.wait_for(lambda: len(channel.notices()) == 3)
    assert channel.notices() == ["This conversation has no such session."] * 3
    for text in channel.notices():
        no_absolute_path(text, workspace)
    await channel.say("still mine", chat_id="c1")
    await channel.wait_idle()
    assert channel.events[-1].session_id == by_chat["c1"]


async def test_resume_refuses_a_cleared_session_and_needs_an_id(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"))
    await channel.say("hello")
    await channel.wait_idle()
    cleared = channel.events[0].session_id
    await channel.say("/clear")
    await channel.wait_for(lambda: channel.notices())  # through the old session's outbox
    await channel.say(f"/resume {cleared}")
    await channel.say("/resume")
    await channel.wait_for(lambda: len(channel.notices()) == 3)
    assert channel.notices() == ["Cleared. Your next message starts a new session.",
                     "That session was cleared; it cannot be resumed.",
                     "Usage: /resume <session_id>"]
