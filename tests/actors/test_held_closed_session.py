"""A hold for a session its conversation's ``/clear`` closed is refused, with nothing held.

Recovery releases without a word the messages held in a session that is closed when it runs
("a session cleared since gets nothing": the ``/clear`` dropped them). A message held in a
session closed *before* the hold was so released too: the caller (a host that kept the
session's id after ``rt.forget_conversation``) believed it protected, and a crash before it
was answered lost it in silence, as one held for a session that does not exist was (refused
since 8e7e55b)."""

from __future__ import annotations

import pytest

from tidings.errors import SessionClosedError

from .conftest import rows


async def test_a_hold_for_a_cleared_session_is_refused_and_nothing_is_held(rt, db_path) -> None:
    session_id, _ = await rt.resolve_conversation("web", "web:dm:1")
    assert await rt.forget_conversation("web", "web:dm:1") == session_id  # /clear
    with pytest.raises(SessionClosedError) as caught:
        await rt.hold_inbound(session_id, notice="not answered", message_id="m1")
    assert session_id in str(caught.value)
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]
    # The conversation's next session holds as before.
    fresh, created = await rt.resolve_conversation("web", "web:dm:1")
    assert created
    assert fresh != session_id
    inbound_id = await rt.hold_inbound(fresh, notice="not answered", message_id="m2")
    assert rows(db_path, "SELECT inbound_id FROM inbound_messages") == [(inbound_id,)]
