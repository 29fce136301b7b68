"""An id with a lone surrogate (what ``os.fsdecode`` or JSON's ``"\\ud800"`` can make) is
refused by name before anything is written, like every other text: it cannot be stored. It
reached the writer and failed there as a bare ``StoreError`` naming nothing, and as a held
message a turn answers (``inbound_ids``) it was taken: the turn ran, and its end, written with
the release, failed three times, leaving the turn ``running`` in the database for good."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError

from .conftest import rows

BAD = "m\ud800"


async def _turn(rt, session_id, **kwargs):
    async with rt.open_turn(session_id, **kwargs):
        pass


@pytest.mark.parametrize(("field", "call"), [
    ("channel", lambda rt, sid: rt.create_session(channel=BAD)),
    ("message_id", lambda rt, sid: rt.hold_inbound(sid, notice="n", message_id=BAD)),
    ("channel", lambda rt, sid: rt.hold_inbound(sid, notice="n", channel=BAD)),
    ("inbound_id", lambda rt, sid: rt.hold_inbound(sid, notice="n", inbound_id=BAD)),
    ("turn_id", lambda rt, sid: _turn(rt, sid, turn_id=BAD)),
    ("message_id", lambda rt, sid: _turn(rt, sid, message_id=BAD)),
    ("inbound_ids", lambda rt, sid: _turn(rt, sid, inbound_ids=[BAD])),
    ("settles", lambda rt, sid: rt.notify(sid, "told", settles=[BAD])),
    ("inbound_ids", lambda rt, sid: rt.release_inbound([BAD])),
    ("turn_id", lambda rt, sid: rt.record_user_message(sid, "hi", turn_id=BAD)),
    ("session_id", lambda rt, sid: rt.session(BAD)),
    ("delivery_id", lambda rt, sid: rt.delivery_status(BAD)),
    ("delivery_ids", lambda rt, sid: rt.confirm([BAD])),
])
async def test_an_id_that_is_not_valid_unicode_is_refused_by_name(rt, db_path, field,
                                                                  call) -> None:
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        await call(rt, session_id)
    assert caught.value.field == field
    assert "lone surrogate" in str(caught.value)
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(1,)]
    assert rows(db_path, "SELECT count(*) FROM turns") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert rows(db_path, "SELECT count(*) FROM messages") == [(0,)]
