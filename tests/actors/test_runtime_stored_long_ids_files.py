"""A session an earlier version stored with an id too long for a directory name (over 255
bytes of UTF-8, or over ``MAX_ID_CHARS``) has no artifact root, as one whose id is no plain
path component: its turns still send files from the workspace, and ``artifact_root_for``
says it has none. It refused every file send instead (``File name too long``, or the id
refused as over ``MAX_ID_CHARS``) and named the cap, not the missing root."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.store import create_session


@pytest.mark.parametrize("chars", [300, 1500])
async def test_a_stored_session_with_a_long_id_sends_files_from_the_workspace(
        rt, workspace, chars) -> None:
    sid = "o" * chars
    await rt.store.commit(create_session(sid, core_id=rt.core_id, channel="web",
                                         now=rt.store.clock()))
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    async with rt.open_turn(sid) as ctx:
        handle = await ctx.output.send_file(workspace / "chart.png", history_text="a chart")
    assert (await rt.delivery_status(handle.delivery_id)).session_id == sid
    with pytest.raises(ValidationError, match="no artifact root") as caught:
        rt.artifact_root_for(sid)
    assert caught.value.field == "session_id"
