"""``rt.open_turn`` refuses a ``message_id`` that is not None or an id by name, before the
turn is begun: ``message_id=3`` or ``""`` was stored as the turn row's message."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError

from .conftest import rows


@pytest.mark.parametrize("bad", [3, "", b"m", ["m"], True])
async def test_open_turn_refuses_a_message_id_that_is_not_an_id(rt, db_path, bad) -> None:
    session_id = await rt.create_session(channel="web")
    with pytest.raises(ValidationError) as caught:
        async with rt.open_turn(session_id, message_id=bad):
            pytest.fail("the turn began")
    assert caught.value.field == "message_id"
    assert rows(db_path, "SELECT count(*) FROM turns") == [(0,)]


async def test_open_turn_still_takes_a_message_id_or_none(rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id, message_id="m1") as first:
        pass
    async with rt.open_turn(session_id) as second:
        pass
    assert rows(db_path, "SELECT turn_id, message_id FROM turns ORDER BY started_at, rowid") == [
        (first.turn_id, "m1"), (second.turn_id, None)]
