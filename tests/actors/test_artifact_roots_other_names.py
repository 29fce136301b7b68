"""Another session's artifact root under another name of the artifacts directory
(DESIGN.md "Artifacts": a path resolving outside the session's own root is refused)."""

from __future__ import annotations

import contextlib
import os
import pathlib
import subprocess
from collections.abc import Iterator

import pytest
import trio

import tidings
from tidings import ArtifactRef
from tidings.testing import MemoryRoute

from .conftest import refuse_as_runtimes_own, rows


@contextlib.contextmanager
def other_name(folder: pathlib.Path, name: str) -> Iterator[pathlib.Path]:
    """*name*, beside *folder*, as another name of it that resolving keeps: on a
    case-insensitive file system (macOS's, Windows') the name in another case is one
    already; elsewhere a bind mount makes one (root only: else skipped)."""
    alias = folder.with_name(name)
    if alias.exists():  # case-insensitive: ARTIFACTS is artifacts
        yield alias
        return
    alias.mkdir()
    try:
        mounted = subprocess.run(["mount", "--bind", str(folder), str(alias)],
                                 capture_output=True, check=False).returncode == 0
    except OSError:
        mounted = False
    if not mounted:
        pytest.skip("needs a second name of a directory: a case-insensitive file system, "
                    "or a bind mount (root)")
    try:
        yield alias
    finally:
        subprocess.run(["umount", str(alias)], check=True)


async def test_another_sessions_root_under_another_name_of_the_artifacts_directory(
        tmp_path) -> None:
    """With ``tidings serve``'s defaults the artifacts directory is ``./artifacts`` in the
    workspace. Another session's root was told by its path only, and resolving keeps the
    case given: on a case-insensitive file system ``ARTIFACTS/<other>/report.pdf`` is that
    session's file, and was sent (here the second name is a bind mount, where Linux's names
    are exact). It is refused as the runtime's own, nothing written; the session's own root
    under that name, and the workspace's files, are sent as before."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("mine")
    db = workspace / "tidings.db"
    async with tidings.open_runtime(db, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        other = await rt.create_session(channel="web")
        route = MemoryRoute(capabilities={"text", "file"})
        rt.router.bind(session_id, route)
        for owner in (session_id, other):
            os.makedirs(rt.artifact_root_for(owner))
            (rt.artifact_root_for(owner) / "report.pdf").write_bytes(b"%PDF")
        with other_name(rt.artifacts_directory, "ARTIFACTS") as alias, trio.fail_after(30):
            async with rt.open_turn(session_id) as ctx:
                await refuse_as_runtimes_own(ctx, (f"ARTIFACTS/{other}/report.pdf",
                                                   str(alias / other / "report.pdf"),
                                                   ArtifactRef(path=alias / other / "report.pdf")))
                assert rows(db, "SELECT count(*) FROM outbox") == [(0,)]
                mine = await ctx.output.send_file(f"ARTIFACTS/{session_id}/report.pdf",
                                                  history_policy="transient")
                notes = await ctx.output.send_file("notes.txt", history_policy="transient")
            assert [await mine.wait(), await notes.wait()] == ["delivered", "delivered"]
    assert [o.blocks[0].location for o in route.delivered] == [
        str(alias.resolve() / session_id / "report.pdf"),
        str((workspace / "notes.txt").resolve())]
    assert rows(db, "SELECT count(*) FROM artifacts") == [(2,)]
