"""``rt.artifact_root_for(session_id)`` refuses an id that is not one plain path component
by name: ``"../x"`` returned a path outside the artifacts directory (``<db dir>/x``), and a
host placing a session's files there wrote them where the SDK would never look, or into
another session's root (``"a/b"``)."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError


@pytest.mark.parametrize("bad", ["../x", "..", ".", "a/b", "/etc", "a\x00b", "", 3, None])
async def test_artifact_root_for_refuses_an_id_that_names_no_directory_of_its_own(
        rt, bad) -> None:
    with pytest.raises(ValidationError) as caught:
        rt.artifact_root_for(bad)
    assert caught.value.field == "session_id"


async def test_artifact_root_for_a_plain_id_is_inside_the_artifacts_directory(rt,
                                                                               db_path) -> None:
    session_id = await rt.create_session(channel="web")
    assert rt.artifact_root_for(session_id) == db_path.parent / "artifacts" / session_id
