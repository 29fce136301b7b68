"""``record_user_messages`` takes its ``texts`` once: a generator (or any one-shot iterable)
of the messages one turn merged is recorded whole.

It iterated ``texts`` three times (to check each text, to make the ids, to write them): a
generator was used up by the check, so nothing was recorded and ``[]`` returned, with no
error: the user's messages were silently missing from history (and from what a later model
sees)."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError


async def test_a_generator_of_texts_is_recorded_whole(rt) -> None:
    session_id = await rt.create_session(channel="web")
    ids = await rt.record_user_messages(session_id, (text for text in ["first", "second"]))
    assert len(ids) == 2
    history = await rt.history(session_id)
    assert [(row.message_id, row.role, row.text) for row in history] == [
        (ids[0], "user", "first"), (ids[1], "user", "second")]



async def test_a_bad_text_among_several_is_named_by_its_index(rt, db_path) -> None:
    """Refused naming ``texts[1]``, the argument given, not ``text`` (an argument
    ``record_user_messages`` has not), and nothing is recorded."""
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        await rt.record_user_messages(session_id, ["fine", "bad \ud800"])
    assert caught.value.field == "texts[1]"
    with pytest.raises(TypeError, match=r"^texts\[0\]"):
        await rt.record_user_messages(session_id, [5])
    assert await rt.history(session_id) == []
