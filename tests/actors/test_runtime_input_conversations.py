"""The conversation calls (``resolve_conversation``, ``new_conversation_session``,
``resume_conversation``, ``forget_conversation``, ``conversation_session``) refuse a channel
or conversation key that could not be stored, or should not be, by name before anything is
written: a key with a lone surrogate died with a bare ``UnicodeEncodeError``, and a 3 MB
channel or key was written whole into the session and conversation rows."""

from __future__ import annotations

import pytest

from tidings.actors import MAX_ID_CHARS
from tidings.actors._conversations import MAX_CONVERSATION_KEY_CHARS
from tidings.errors import ValidationError

from .conftest import rows

CALLS = {
    "resolve": lambda rt, channel, key: rt.resolve_conversation(channel, key),
    "lookup": lambda rt, channel, key: rt.conversation_session(channel, key),
    "new": lambda rt, channel, key: rt.new_conversation_session(channel, key),
    "resume": lambda rt, channel, key: rt.resume_conversation(channel, key, "session_1"),
    "forget": lambda rt, channel, key: rt.forget_conversation(channel, key),
}


_BAD = [
    ("web", "web:dm:\ud800", "conversation_key", "key-surrogate"),
    ("web\udcff", "web:dm:1", "channel", "channel-surrogate"),
]
# Over a cap only a new conversation is refused: a lookup finds what an earlier version
# stored at any length (test_conversations_stored_long_keys.py).
_OVER = [
    ("w" * (MAX_ID_CHARS + 1), "web:dm:1", "channel", "channel-over"),
    ("web", "k" * (MAX_CONVERSATION_KEY_CHARS + 1), "conversation_key", "key-over"),
]
_REFUSED = [(name, *case) for case in _BAD for name in CALLS] \
    + [(name, *case) for case in _OVER for name in ("resolve", "new")]


@pytest.mark.parametrize(("name", "channel", "key", "field"),
                         [case[:4] for case in _REFUSED],
                         ids=[f"{case[4]}-{case[0]}" for case in _REFUSED])
async def test_a_bad_channel_or_key_is_refused_before_anything_is_written(
        rt, db_path, name, channel, key, field) -> None:
    with pytest.raises(ValidationError) as caught:
        await CALLS[name](rt, channel, key)
    assert caught.value.field == field
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(0,)]


async def test_a_key_and_channel_at_the_caps_are_taken(rt) -> None:
    channel, key = "w" * MAX_ID_CHARS, "k" * MAX_CONVERSATION_KEY_CHARS
    session_id, created = await rt.resolve_conversation(channel, key)
    assert created
    assert await rt.conversation_session(channel, key) == session_id
    assert await rt.forget_conversation(channel, key) == session_id
