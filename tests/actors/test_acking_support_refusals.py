"""Bad arguments to the runtime's calls for channels whose clients come back (replay,
hand-back, client message ids) are refused by name, before anything is read or written.

An id that was not a string reached SQLite and came back as a ``StoreError`` about parameter
binding (or a ``TypeError`` about hashing), naming nothing; ``None`` or ``""`` was looked up
as a session (an empty replay, nothing confirmed, no error); a lone delivery id given to
``conversation_deliveries`` was read as its characters (none found, so an ack was refused as
foreign); and ``remember_client_message`` with a client id of ``None`` answered False, "recorded
before", for a message never seen, writing nothing.
"""

from __future__ import annotations

import pytest

from tidings.actors import MAX_ID_CHARS
from tidings.errors import ValidationError

BAD_IDS = [None, "", 3, ["s"], b"s"]

SESSION_CALLS = {
    "confirm_through": lambda rt, sid: rt.confirm_through(sid, 1),
    "requeue": lambda rt, sid: rt.requeue(sid, ["delivery_x"]),
    "stored_deliveries": lambda rt, sid: rt.stored_deliveries(sid),
    "last_seq": lambda rt, sid: rt.last_seq(sid),
    "last_handed_seq": lambda rt, sid: rt.last_handed_seq(sid),
    "drop_missed_progress": lambda rt, sid: rt.drop_missed_progress(sid, 0),
}


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("call", list(SESSION_CALLS))
async def test_a_session_id_that_is_not_one_is_refused_by_name(rt, call, bad) -> None:
    with pytest.raises(ValidationError) as caught:
        await SESSION_CALLS[call](rt, bad)
    assert caught.value.field == "session_id"


CONVERSATION_CALLS = {
    "conversation_deliveries": lambda rt, ch, key, cid: rt.conversation_deliveries(
        ch, key, [cid]),
    "client_message_outcome": lambda rt, ch, key, cid: rt.client_message_outcome(ch, key, cid),
    "remember_client_message": lambda rt, ch, key, cid: rt.remember_client_message(
        ch, key, cid, session_id=None, outcome="command"),
}
ID_FIELDS = {"conversation_deliveries": "delivery_ids", "client_message_outcome": "client_id",
             "remember_client_message": "client_id"}


@pytest.mark.parametrize("bad", BAD_IDS)
@pytest.mark.parametrize("position", ["channel", "conversation_key", "id"])
@pytest.mark.parametrize("call", list(CONVERSATION_CALLS))
async def test_conversation_ids_that_are_not_ids_are_refused_by_name(rt, db_path, call,
                                                                    position, bad) -> None:
    args = {"channel": "ops", "conversation_key": "ops:chat:c1", "id": "m1", position: bad}
    with pytest.raises(ValidationError) as caught:
        await CONVERSATION_CALLS[call](rt, args["channel"], args["conversation_key"],
                                       args["id"])
    assert caught.value.field == (ID_FIELDS[call] if position == "id" else position)
    # Nothing was recorded: the good id is still new.
    assert await rt.client_message_outcome("ops", "ops:chat:c1", "m1") is None


async def test_a_lone_delivery_id_is_not_read_as_its_characters(rt) -> None:
    with pytest.raises(ValidationError) as caught:
        await rt.conversation_deliveries("ops", "ops:chat:c1", "delivery_x")
    assert caught.value.field == "delivery_ids"


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"client_id": "m" * (MAX_ID_CHARS + 1)}, "client_id"),
    ({"session_id": ""}, "session_id"),
    ({"session_id": 3}, "session_id"),
    ({"outcome": None}, "outcome"),
    ({"outcome": ""}, "outcome"),
    ({"outcome": object()}, "outcome"),
])
async def test_remember_client_message_refuses_what_it_cannot_record(rt, kwargs, field) -> None:
    args = {"client_id": "m1", "session_id": None, "outcome": "command", **kwargs}
    client_id = args.pop("client_id")
    with pytest.raises(ValidationError) as caught:
        await rt.remember_client_message("ops", "ops:chat:c1", client_id, **args)
    assert caught.value.field == field
    assert await rt.remember_client_message("ops", "ops:chat:c1", "m1", session_id=None,
                                            outcome="command") is True
    assert await rt.client_message_outcome("ops", "ops:chat:c1", "m1") == "command"


@pytest.mark.parametrize("bad", [-1, 1.5, None, True, "3", 2 ** 63])
async def test_drop_missed_progress_refuses_an_after_seq_that_is_no_seq(rt, bad) -> None:
    session_id = await rt.create_session("ops")
    with pytest.raises(ValidationError) as caught:
        await rt.drop_missed_progress(session_id, bad)
    assert caught.value.field == "after_seq"
