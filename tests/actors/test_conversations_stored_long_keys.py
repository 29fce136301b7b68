"""A conversation an earlier version stored with a key over ``MAX_CONVERSATION_KEY_CHARS``
(8192) or a channel over ``MAX_ID_CHARS`` (1024), and a turn whose id a host chose over
``MAX_ID_CHARS``, stay usable. Before the caps any length was stored; the caps are for what a
caller creates (a new conversation, a new session of one), never for looking up what is
stored: ``resolve_conversation``, ``conversation_session``, ``resume_conversation`` and
``forget_conversation`` refused such a conversation as if no one could have it, and
``record_user_message(turn_id=)`` and ``session_has_turns(excluding=)`` such a turn."""

from __future__ import annotations

import pytest

from tidings.errors import SessionNotFoundError, ValidationError
from tidings.store import begin_turn, bind_conversation, create_session

from .conftest import rows

LONG_KEY = "k" * 9000  # over MAX_CONVERSATION_KEY_CHARS
LONG_CHANNEL = "c" * 1500  # over MAX_ID_CHARS
LONG_TURN = "t" * 1500  # over MAX_ID_CHARS

CASES = [("web", LONG_KEY), (LONG_CHANNEL, "key")]
IDS = ["long-key", "long-channel"]


async def _stored_by_an_earlier_version(rt, channel: str, key: str, session_id: str,
                                        *, bound: bool = True) -> str:
    """A session of the conversation (and its binding), as an earlier version wrote them."""
    now = rt.store.clock()
    await rt.store.commit(create_session(session_id, core_id=rt.core_id, channel=channel,
                                         conversation_key=key, now=now))
    if bound:
        await rt.store.commit([bind_conversation(rt.core_id, channel, key, session_id,
                                                 now=now)])
    return session_id


@pytest.mark.parametrize(("channel", "key"), CASES, ids=IDS)
async def test_a_stored_long_conversation_is_found_resolved_resumed_and_forgotten(
        rt, channel: str, key: str) -> None:
    older = await _stored_by_an_earlier_version(rt, channel, key, "s-older", bound=False)
    sid = await _stored_by_an_earlier_version(rt, channel, key, "s-now")
    assert await rt.conversation_session(channel, key) == sid
    assert await rt.resolve_conversation(channel, key) == (sid, False)
    await rt.resume_conversation(channel, key, older)
    assert await rt.conversation_session(channel, key) == older
    assert await rt.forget_conversation(channel, key) == older
    assert await rt.conversation_session(channel, key) is None


@pytest.mark.parametrize(("channel", "key"), CASES, ids=IDS)
async def test_a_new_long_conversation_is_still_refused_and_nothing_is_written(
        rt, db_path, channel: str, key: str) -> None:
    field = "conversation_key" if key == LONG_KEY else "channel"
    before = rows(db_path, "SELECT count(*) FROM sessions")
    assert await rt.conversation_session(channel, key) is None
    for create in (rt.resolve_conversation, rt.new_conversation_session):
        with pytest.raises(ValidationError) as caught:
            await create(channel, key)
        assert caught.value.field == field
    with pytest.raises(SessionNotFoundError):
        await rt.resume_conversation(channel, key, "s-none")
    assert await rt.forget_conversation(channel, key) is None
    assert rows(db_path, "SELECT count(*) FROM sessions") == before
    assert rows(db_path, "SELECT count(*) FROM conversation_bindings") == [(0,)]


async def test_a_stored_long_turn_id_is_recorded_against_and_excluded(rt, db_path) -> None:
    sid = await rt.create_session("web")
    assert not await rt.session_has_turns(sid)
    await rt.store.commit(begin_turn(LONG_TURN, session_id=sid, slot="main", mode="normal",
                                     now=rt.store.clock()))
    assert await rt.session_has_turns(sid)
    assert not await rt.session_has_turns(sid, excluding=[LONG_TURN])
    message_id = await rt.record_user_message(sid, "hello", turn_id=LONG_TURN)
    assert rows(db_path, "SELECT turn_id FROM messages WHERE message_id = ?",
                message_id) == [(LONG_TURN,)]
