"""A caller-chosen session id names its artifact directory, and no file system takes a name of
more than 255 bytes: ``create_session`` refuses a longer id (in UTF-8) by name, before anything
is written. A 300-character id made a session whose artifact root could never be created
("File name too long"): every send from it was refused."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError

from .conftest import rows


@pytest.mark.parametrize("session_id", ["s" * 256, "é" * 128, "セ" * 86],
                         ids=["ascii", "latin", "cjk"])
async def test_create_session_refuses_an_id_too_long_for_a_directory_name(
        rt, db_path, session_id) -> None:
    assert len(session_id.encode()) > 255
    with pytest.raises(ValidationError) as caught:
        await rt.create_session(channel="web", session_id=session_id)
    assert caught.value.field == "session_id"
    assert "255" in str(caught.value)
    assert rows(db_path, "SELECT count(*) FROM sessions") == [(0,)]


@pytest.mark.parametrize("session_id", ["s" * 255, "é" * 127 + "s", "セ" * 85],
                         ids=["ascii", "latin", "cjk"])
async def test_an_id_of_at_most_255_bytes_gets_a_usable_artifact_root(rt, session_id) -> None:
    assert await rt.create_session(channel="web", session_id=session_id) == session_id
    root = rt.artifact_root_for(session_id)
    root.mkdir(parents=True)
    (root / "chart.png").write_bytes(b"\x89PNG")
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_file(root / "chart.png", history_text="a chart")
    assert (await rt.delivery_status(handle.delivery_id)).session_id == session_id
