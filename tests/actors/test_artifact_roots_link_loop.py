"""An artifacts directory that is a symbolic link loop (DESIGN.md "Artifacts": a path source
is checked against the workspace and the session's artifact root)."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings import ArtifactRef
from tidings.errors import ArtifactError
from tidings.testing import MemoryRoute

from .conftest import rows


async def test_an_artifacts_directory_that_is_a_link_loop_breaks_no_other_send(
        tmp_path) -> None:
    """With ``tidings serve``'s defaults the artifacts directory is ``./artifacts`` in the
    workspace, where a turn's agent writes: before any session saved a file there, it can
    make that name a symbolic link to itself. Every path send of every session then raised
    a bare ``RuntimeError('Symlink loop ...')`` naming no argument, a workspace file too
    (resolving the session's root raised it). The loop leads nowhere, so no file is there:
    a workspace file is sent, and a path through the loop is refused naming its source."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("mine")
    db = workspace / "tidings.db"
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute(capabilities={"text", "file"})
        rt.router.bind(session_id, route)
        loop = rt.artifacts_directory
        loop.symlink_to(loop)
        with trio.fail_after(30):  # hang guard
            async with rt.open_turn(session_id) as ctx:
                notes = await ctx.output.send_file("notes.txt", history_policy="transient")
                for source in (f"artifacts/{session_id}/x.png",
                               ArtifactRef(path=loop / session_id / "x.png")):
                    with pytest.raises(ArtifactError) as caught:
                        await ctx.output.send_file(source, history_policy="transient")
                    assert caught.value.field.startswith("source"), source
            assert await notes.wait() == "delivered"
    assert [o.blocks[0].name for o in route.delivered] == ["notes.txt"]
    assert rows(db, "SELECT count(*) FROM artifacts") == [(1,)]


async def test_a_workspace_made_a_link_loop_after_open_is_refused_naming_the_source(
        tmp_path) -> None:
    """The workspace is resolved at open; whoever writes its folder can swap it for a
    symbolic link to itself afterwards. A file of the session's artifact root (an absolute
    path, resolved without the workspace) then reached the workspace's own resolve, whose
    ``RuntimeError('Symlink loop ...')`` came out of ``send_file`` bare, naming no argument.
    It is an :class:`ArtifactError` naming the source, as a path through the loop is."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    db = tmp_path / "state" / "tidings.db"
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute(capabilities={"text", "file"}))
        root = rt.artifact_root_for(session_id)
        root.mkdir(parents=True)
        (root / "report.pdf").write_bytes(b"%PDF")
        workspace.rename(tmp_path / "moved")
        workspace.symlink_to(workspace)
        with trio.fail_after(30):  # hang guard
            async with rt.open_turn(session_id) as ctx:
                for source in (str(root / "report.pdf"), "notes.txt",
                               ArtifactRef(path=root / "report.pdf")):
                    with pytest.raises(ArtifactError) as caught:
                        await ctx.output.send_file(source, history_policy="transient")
                    assert caught.value.field.startswith("source"), source
                    assert "cannot resolve" in str(caught.value), source
    assert rows(db, "SELECT count(*) FROM artifacts") == [(0,)]
