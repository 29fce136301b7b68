"""A relative media source is taken from the workspace; a refusal says so (seed 001, "source:
Workspace/session path").

The SDK page lists a session path beside a workspace path as a source, so an author whose tool
saved ``report.pdf`` in the session's artifact root may send it as ``send_file("report.pdf")``.
tidings takes a relative path from the workspace only (a file of the session's artifact root is
named by its full path), and the refusal said only ``no such file: 'report.pdf'``, which does
not say where it looked, or that the file is there under its full path.
"""

from __future__ import annotations

import os

import pytest
import trio

from tidings.errors import ArtifactError

from .conftest import rows


async def _refusal(rt, session_id, source) -> str:
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            with pytest.raises(ArtifactError) as caught:
                await ctx.output.send_file(source, history_policy="transient")
    assert caught.value.field == "source"
    return str(caught.value)


async def test_a_relative_path_in_the_session_root_is_refused_naming_where_it_is(
        rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    root = rt.artifact_root_for(session_id)
    os.makedirs(root, exist_ok=True)
    (root / "report.pdf").write_bytes(b"%PDF")
    message = await _refusal(rt, session_id, "report.pdf")
    assert "workspace" in message, message
    assert "artifact root" in message, message
    assert "full path" in message, message
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    # Named by its full path, as the refusal says, it is sent.
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_file(root / "report.pdf", history_policy="transient")
    assert await handle.wait() == "unrouted"  # (no route bound: only that it was taken)


async def test_a_relative_path_found_nowhere_says_it_was_looked_for_in_the_workspace(
        rt) -> None:
    session_id = await rt.create_session(channel="web")
    message = await _refusal(rt, session_id, "missing.pdf")
    assert "no such file in the workspace" in message, message
    assert "artifact root" not in message, message  # no hint where there is nothing to find


async def test_an_absolute_missing_path_is_refused_as_before(rt, workspace) -> None:
    session_id = await rt.create_session(channel="web")
    message = await _refusal(rt, session_id, str(workspace / "missing.pdf"))
    assert "no such file:" in message, message
    assert "in the workspace" not in message, message
