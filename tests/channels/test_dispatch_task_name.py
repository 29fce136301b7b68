"""A channel's turn worker is a runtime task named ``<channel>:<session id>`` (for the logs),
and ``start_task`` refuses a name over ``MAX_ID_CHARS``. Both parts are legal ids, so the
name could be over the cap: a session an earlier version stored with a long id (still
usable, see tests/actors/test_runtime_stored_long_ids.py), or a channel named at the cap.
The worker was then never started: the message failed with ``ValidationError('name')`` and
stayed held (told "not answered" after a restart). The name is now bounded to the cap."""

from __future__ import annotations

from tidings.actors import MAX_ID_CHARS
from tidings.channels import ChannelConfig, EchoAgent
from tidings.store import bind_conversation

from .conftest import RecordingChannel, rows

OLD = "o" * 1500  # a session id an earlier version stored as given


async def test_a_conversation_bound_to_a_stored_long_session_id_is_answered(rt,
                                                                            db_path) -> None:
    await rt.store.commit([bind_conversation(rt.core_id, "ops", "ops:chat:c1", OLD,
                                             now=rt.store.clock(), create=True)])
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=EchoAgent())
    assert await channel.say("hello", message_id="m1") == "started"
    await channel.wait_idle()
    assert [(e.type, e.session_id) for e in channel.events if e.terminal] == [
        ("completed", OLD)]
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]


async def test_a_channel_named_at_the_cap_handles_messages(rt) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="a" * MAX_ID_CHARS), agent=EchoAgent())
    assert await channel.say("hello", message_id="m1") == "started"
    await channel.wait_idle()
    assert [e.type for e in channel.events if e.terminal] == ["completed"]
