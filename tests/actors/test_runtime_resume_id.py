"""``resume_conversation`` checks its ``session_id`` as every call taking a session id does:
one with a lone surrogate escaped as a bare ``UnicodeEncodeError`` from the writer (naming
nothing); it is a :class:`ValidationError` naming ``session_id`` now, before any write. A
well-formed id is looked up, however long (an earlier version may have stored it)."""

from __future__ import annotations

import pytest

from tidings.errors import SessionNotFoundError, ValidationError


@pytest.mark.parametrize("bad", ["s\ud800", "", 3], ids=["surrogate", "empty", "int"])
async def test_resume_refuses_a_session_id_no_session_can_have(rt, bad) -> None:
    first = await rt.new_conversation_session("ops", "ops:chat:c1")
    with pytest.raises(ValidationError) as caught:
        await rt.resume_conversation("ops", "ops:chat:c1", bad)
    assert caught.value.field == "session_id"
    assert await rt.conversation_session("ops", "ops:chat:c1") == first


async def test_resume_looks_a_long_well_formed_id_up(rt) -> None:
    await rt.new_conversation_session("ops", "ops:chat:c1")
    with pytest.raises(SessionNotFoundError):
        await rt.resume_conversation("ops", "ops:chat:c1", "x" * 5000)
