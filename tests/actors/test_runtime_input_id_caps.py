"""Ids and lists of ids given to the runtime are capped: a list of held messages to release
(``settles=``, ``inbound_ids=``, ``release_inbound``) of more than ``MAX_IDS_PER_CALL`` ids,
or an id of more than ``MAX_ID_CHARS`` characters, is refused with a :class:`ValidationError`
naming the field, before anything is written. A million ids were accepted and released in one
commit that held the store's only writer (every session's sends) for seconds; a 3 MB
``message_id`` or ``inbound_id`` was stored whole."""

from __future__ import annotations

import pytest
import trio

from tidings.actors import MAX_ID_CHARS, MAX_IDS_PER_CALL
from tidings.errors import ValidationError

from .conftest import rows


def _held(db_path) -> list[str]:
    return [row[0] for row in rows(db_path, "SELECT inbound_id FROM inbound_messages")]


async def _notify(rt, session_id, ids):
    await rt.notify(session_id, "told", settles=ids)


async def _send(rt, session_id, ids):
    async with rt.open_turn(session_id) as ctx:
        await ctx.output.send_text("reply", settles=ids)


async def _turn(rt, session_id, ids):
    async with rt.open_turn(session_id, inbound_ids=ids):
        pass


async def _release(rt, session_id, ids):
    await rt.release_inbound(ids)


RELEASING = [(_notify, "settles"), (_send, "settles"), (_turn, "inbound_ids")]


@pytest.mark.parametrize(("call", "field"), RELEASING)
async def test_a_list_of_ids_over_the_cap_is_refused_before_anything_is_written(
        rt, db_path, call, field) -> None:
    session_id = await rt.create_session(channel="web")
    held = await rt.hold_inbound(session_id, notice="not answered")
    too_many = [held, *(f"other_{n}" for n in range(MAX_IDS_PER_CALL))]
    with trio.fail_after(30), pytest.raises(ValidationError) as caught:  # hang guard
        await call(rt, session_id, too_many)
    assert caught.value.field == field
    assert str(MAX_IDS_PER_CALL) in str(caught.value)
    assert _held(db_path) == [held]
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM messages") == [(0,)]


@pytest.mark.parametrize(("call", "field"), [*RELEASING, (_release, "inbound_ids")])
async def test_a_list_at_the_cap_still_releases(rt, db_path, call, field) -> None:
    """The cap counts distinct ids: repeats are dropped first, as before."""
    session_id = await rt.create_session(channel="web")
    held = await rt.hold_inbound(session_id, notice="not answered")
    at_cap = [held, *(f"other_{n}" for n in range(MAX_IDS_PER_CALL - 1)), held]
    with trio.fail_after(30):  # hang guard
        await call(rt, session_id, at_cap)
    assert _held(db_path) == []


async def test_release_inbound_releases_any_number_of_ids_a_commit_per_cap(rt, db_path
                                                                            ) -> None:
    """``release_inbound`` goes with nothing else: over the cap it is not refused (``/clear``
    may drop more), it is released in several commits, none holding the writer long."""
    session_id = await rt.create_session(channel="web")
    first = await rt.hold_inbound(session_id, notice="not answered")
    last = await rt.hold_inbound(session_id, notice="not answered")
    ids = [first, *(f"other_{n}" for n in range(MAX_IDS_PER_CALL - 1)), last]
    before = rt.store.statistics().requests
    with trio.fail_after(30):  # hang guard
        await rt.release_inbound(ids)
    assert rt.store.statistics().requests - before == 2
    assert _held(db_path) == []


async def test_an_id_in_a_list_over_the_length_cap_is_refused(rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    held = await rt.hold_inbound(session_id, notice="not answered")
    with pytest.raises(ValidationError) as caught:
        await rt.notify(session_id, "told", settles=[held, "i" * (MAX_ID_CHARS + 1)])
    assert caught.value.field == "settles"
    assert _held(db_path) == [held]
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]


LONG = "x" * (MAX_ID_CHARS + 1)


async def _turn_with(rt, session_id, **kwargs):
    async with rt.open_turn(session_id, **kwargs):
        pass


@pytest.mark.parametrize(("field", "call"), [
    ("session_id", lambda rt, sid: rt.create_session(session_id=LONG)),
    ("channel", lambda rt, sid: rt.create_session(channel=LONG)),
    ("message_id", lambda rt, sid: rt.hold_inbound(sid, notice="n", message_id=LONG)),
    ("channel", lambda rt, sid: rt.hold_inbound(sid, notice="n", channel=LONG)),
    ("inbound_id", lambda rt, sid: rt.hold_inbound(sid, notice="n", inbound_id=LONG)),
    ("turn_id", lambda rt, sid: _turn_with(rt, sid, turn_id=LONG)),
    ("turn_id", lambda rt, sid: rt.record_user_message(sid, "hi", turn_id=LONG)),
])
async def test_an_id_over_the_length_cap_is_refused_before_anything_is_written(
        rt, db_path, field, call) -> None:
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        await call(rt, session_id)
    assert caught.value.field == field
    assert str(MAX_ID_CHARS) in str(caught.value)
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(1,)]
    assert _held(db_path) == []
    assert rows(db_path, "SELECT count(*) FROM turns") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM messages") == [(0,)]


async def test_ids_at_the_length_cap_are_taken(rt, db_path) -> None:
    """(A session id you choose is shorter still: it names a directory.)"""
    at_cap = "y" * MAX_ID_CHARS
    session_id = await rt.create_session(channel="c" * MAX_ID_CHARS)
    held = await rt.hold_inbound(session_id, notice="n", message_id=at_cap, inbound_id=at_cap)
    async with rt.open_turn(session_id, turn_id=at_cap, message_id=at_cap, inbound_ids=[held]):
        pass
    assert _held(db_path) == []
    assert rows(db_path, "SELECT turn_id, message_id FROM turns") == [(at_cap, at_cap)]
    with pytest.raises(LookupError):  # looked up, not refused
        await rt.session(at_cap)
