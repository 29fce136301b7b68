"""``open_runtime`` caps ``core_id`` at ``MAX_ID_CHARS`` (99015bd), but earlier versions took
any length and stored it in every session and conversation row: a host that kept its long core
id could no longer open its database, and one that shortened it lost every conversation's
session (they are bound under the core id). A core id over the cap is still refused for a new
database (or one that never stored it), but taken for a database whose sessions have it."""

from __future__ import annotations

import pytest

import tidings
from tidings.actors import MAX_ID_CHARS
from tidings.errors import ValidationError
from tidings.store import bind_conversation

from .conftest import rows

LONG = "core-" + "c" * MAX_ID_CHARS


async def test_a_database_stored_with_a_long_core_id_still_opens_with_it(db_path,
                                                                         workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        # What an earlier version wrote under its core id: a conversation and its session.
        await rt.store.commit([bind_conversation(LONG, "ops", "ops:chat:c1", "session_old",
                                                 now=rt.store.clock(), create=True)])
    async with tidings.open_runtime(db_path, workspace=workspace, core_id=LONG) as rt:
        assert rt.core_id == LONG
        assert await rt.conversation_session("ops", "ops:chat:c1") == "session_old"


async def test_a_long_core_id_no_session_has_is_still_refused(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        await rt.create_session("ops")
    with pytest.raises(ValidationError) as caught:
        async with tidings.open_runtime(db_path, workspace=workspace, core_id=LONG):
            pass
    assert caught.value.field == "core_id"
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(1,)]
