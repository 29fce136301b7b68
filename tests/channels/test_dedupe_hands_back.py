"""``dedupe_message_ids`` after a restart: the platform delivers again a message whose first
delivery was accepted (held, its id written with the hold) when the server stopped before
answering it, since it never got its HTTP answer. Recovery's "not answered" notice waits,
``unrouted``, for the conversation to speak; the retry was answered ``duplicate`` without
handing it back, so the user heard nothing, neither the answer nor that they should send the
message again, until they wrote something else. A duplicate is the conversation speaking: the
notice goes out then (and the retry is still a duplicate: no turn)."""

from __future__ import annotations

import trio

import tidings
from tidings.channels import AccessPolicy, ChannelConfig

from .conftest import GatedAgent, RecordingChannel

DEDUPE = ChannelConfig("ops", dedupe_message_ids=True)


async def test_a_retry_after_a_restart_gets_the_not_answered_notice(db_path, workspace) -> None:
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, DEDUPE, agent=agent)
        assert await channel.say("cut short", message_id="m1") == "started"
        await agent.wait_turns(1)
    later = GatedAgent(block=False)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 1
        channel = RecordingChannel(rt, DEDUPE, agent=later)
        assert await channel.say("cut short", message_id="m1") == "duplicate"
        with trio.fail_after(10):  # real time: a notice never handed back must not hang
            [told] = await channel.wait_outbounds(1)
    assert told.kind == "notice"
    assert '"cut short"' in told.text
    assert later.turns == []


async def test_a_refused_senders_retry_hands_nothing_back(db_path, workspace) -> None:
    """A refused sender's message creates nothing and hands nothing back (the access policy
    comes first); its retry, a duplicate, does not either."""
    config = ChannelConfig("ops", dedupe_message_ids=True, access=AccessPolicy.allow("u1"))
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        channel = RecordingChannel(rt, config, agent=agent)
        assert await channel.say("cut short", message_id="m1") == "started"
        await agent.wait_turns(1)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        channel = RecordingChannel(rt, config)
        assert await channel.say("hi", sender_id="u2", message_id="m2") == "refused"
        assert await channel.say("hi", sender_id="u2", message_id="m2") == "duplicate"
        # A hand-back binds the session before it returns: nothing was bound.
        session_id = await rt.conversation_session("ops", "ops:chat:c1")
        assert session_id is not None
        assert rt.router.binding(session_id) is None
