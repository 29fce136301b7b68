"""Writing into a session without a turn (``notify``, ``record_user_message``) and asking
whether it had one (``session_has_turns``) refuse a bad ``session_id`` or ``turn_id`` with a
:class:`ValidationError` naming it, before anything is written: a list reached SQLite (a bare
``StoreError`` about binding a parameter) and ``turn_id=5`` or ``""`` was stored as a history
row's turn."""

from __future__ import annotations

import pytest

from tidings.actors import MAX_JSON_BYTES, MAX_TEXT_BYTES
from tidings.errors import ValidationError

from .conftest import rows

BAD_IDS = [[1], 5, b"session", "", None]


@pytest.mark.parametrize("bad", BAD_IDS)
async def test_session_io_refuses_a_session_id_that_is_not_a_string(rt, db_path, bad) -> None:
    await rt.create_session(channel="web")
    calls = {"notify": lambda: rt.notify(bad, "x"),
             "record_user_message": lambda: rt.record_user_message(bad, "x"),
             "session_has_turns": lambda: rt.session_has_turns(bad)}
    for name, call in calls.items():
        with pytest.raises(ValidationError) as caught:
            await call()
        assert caught.value.field == "session_id", name
    assert rows(db_path, "SELECT count(*) FROM messages") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


@pytest.mark.parametrize("bad", [[1], 5, b"turn", ""])
async def test_record_user_message_refuses_a_turn_id_that_is_not_a_string(
        rt, db_path, bad) -> None:
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        await rt.record_user_message(session_id, "hello", turn_id=bad)
    assert caught.value.field == "turn_id"
    assert await rt.history(session_id) == []


async def test_record_user_message_still_takes_no_turn_or_a_turn_id(rt) -> None:
    session_id = await rt.create_session(channel="web")
    await rt.record_user_message(session_id, "a")
    await rt.record_user_message(session_id, "b", turn_id="turn_1")
    assert [(m.text, m.turn_id) for m in await rt.history(session_id)] == [
        ("a", None), ("b", "turn_1")]


async def test_notify_refuses_an_empty_or_oversized_text_as_a_turns_notice_does(
        rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    for text in ["", "x" * (MAX_TEXT_BYTES + 1)]:
        with pytest.raises(ValidationError) as caught:
            await rt.notify(session_id, text)
        assert caught.value.field == "text"
    with pytest.raises(ValidationError) as caught:
        await rt.hold_inbound(session_id, notice="x" * (MAX_TEXT_BYTES + 1))
    assert caught.value.field == "notice"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
    await rt.notify(session_id, "x" * MAX_TEXT_BYTES)  # at the cap: accepted


async def test_notify_refuses_metadata_over_the_json_cap_as_a_turns_notice_does(
        rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        await rt.notify(session_id, "hi", metadata={"blob": "x" * MAX_JSON_BYTES})
    assert caught.value.field == "metadata"
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
