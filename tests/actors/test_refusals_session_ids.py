"""A caller-chosen session id must be safe as one path component (its artifact root is
``<artifacts>/<session_id>``): anything else is refused by ``create_session`` before anything
is written, instead of making a session that silently has no artifact root."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError

from .conftest import rows

UNSAFE = ["", ".", "..", "/", "a/b", "../x", "a/../..", "a\\b", "..\\x", "a\x00b", "\x00",
          "s\ud800", "\udcff"]


@pytest.mark.parametrize("session_id", UNSAFE)
async def test_create_session_refuses_an_id_that_is_not_one_path_component(
        rt, db_path, session_id) -> None:
    before = rows(db_path, "SELECT count(*) FROM sessions")
    parent = await rt.create_session(channel="web")
    for options in ({}, {"parent_session_id": parent}):
        with pytest.raises(ValidationError) as caught:
            await rt.create_session(channel="web", session_id=session_id, **options)
        assert caught.value.field == "session_id"
    after = rows(db_path, "SELECT count(*) FROM sessions")
    assert after[0][0] == before[0][0] + 1  # only the parent
    assert not (db_path.parent / "artifacts").exists()


@pytest.mark.parametrize("session_id", ["session_1", "sess-1:2", "a.b", "..x", "x..",
                                        "chat 42", "セッション", "session_child_0af"])
async def test_plain_names_are_still_taken(rt, session_id) -> None:
    assert await rt.create_session(channel="web", session_id=session_id) == session_id
    assert rt.artifact_root_for(session_id).name == session_id
    assert (await rt.session(session_id)).session_id == session_id
