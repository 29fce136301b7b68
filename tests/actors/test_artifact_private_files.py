"""``open_runtime(private_files=...)``: the host's secrets are never artifacts, though the
workspace holds them (DESIGN.md "Artifacts": what is the runtime's own is refused)."""

from __future__ import annotations

import os

import pytest
import trio

import tidings
from tidings import ArtifactRef
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

from .conftest import refuse_as_runtimes_own, rows


async def test_a_private_file_is_refused_however_it_is_named(tmp_path, monkeypatch) -> None:
    """By its name (relative, absolute, given relative at open and the current directory
    changed since), through a symbolic or hard link, as an ArtifactRef; a private name that
    is itself a link protects the file it leads to. The workspace's other files are sent."""
    workspace = tmp_path / "ws"
    (workspace / "keys").mkdir(parents=True)
    (workspace / "keys" / "api.key").write_text("secret")
    (workspace / "keys" / "real.key").write_text("secret too")
    (workspace / "alias.key").symlink_to(workspace / "keys" / "real.key")
    (workspace / "notes.txt").write_text("mine")
    monkeypatch.chdir(workspace)
    async with tidings.open_runtime(tmp_path / "state" / "t.db", workspace=workspace,
                                    private_files=["keys/api.key",
                                                   workspace / "alias.key"]) as rt:
        monkeypatch.chdir(tmp_path)
        assert rt.private_files == (workspace / "keys" / "api.key", workspace / "alias.key")
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute(capabilities={"text", "file"})
        rt.router.bind(session_id, route)
        (workspace / "link.txt").symlink_to("keys/api.key")
        os.link(workspace / "keys" / "api.key", workspace / "hard.txt")
        refused = ["keys/api.key", str(workspace / "keys" / "api.key"), "link.txt",
                   "hard.txt", ArtifactRef(path="keys/api.key"), "alias.key",
                   "keys/real.key"]
        with trio.fail_after(30):  # hang guard
            async with rt.open_turn(session_id) as ctx:
                await refuse_as_runtimes_own(ctx, refused)
                notes = await ctx.output.send_file("notes.txt", history_policy="transient")
            assert await notes.wait() == "delivered"
    assert [o.blocks[0].name for o in route.delivered] == ["notes.txt"]
    assert rows(tmp_path / "state" / "t.db", "SELECT count(*) FROM artifacts") == [(1,)]


async def test_a_private_folder_covers_what_is_in_it(tmp_path, monkeypatch) -> None:
    """A folder named private covers the files in it, at any depth, however they are named
    (through a link to one of them or to the folder, or the folder named by a link), not the
    workspace's files beside it, even one whose name starts as the folder's does."""
    workspace = tmp_path / "ws"
    (workspace / "secrets" / "deep").mkdir(parents=True)
    (workspace / "secrets" / "api.key").write_text("secret")
    (workspace / "secrets" / "deep" / "db.key").write_text("secret too")
    (workspace / "vault-real").mkdir()
    (workspace / "vault-real" / "master.key").write_text("secret three")
    (workspace / "vault").symlink_to("vault-real")
    (workspace / "secrets-list.txt").write_text("mine")
    monkeypatch.chdir(workspace)
    async with tidings.open_runtime(tmp_path / "state" / "t.db", workspace=workspace,
                                    private_files=["secrets", workspace / "vault"]) as rt:
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute(capabilities={"text", "file"})
        rt.router.bind(session_id, route)
        (workspace / "link.txt").symlink_to("secrets/deep/db.key")
        (workspace / "door").symlink_to("secrets")
        refused = ["secrets/api.key", str(workspace / "secrets" / "deep" / "db.key"),
                   "link.txt", "door/api.key", ArtifactRef(path="secrets/deep/db.key"),
                   "vault/master.key", "vault-real/master.key"]
        with trio.fail_after(30):  # hang guard
            async with rt.open_turn(session_id) as ctx:
                await refuse_as_runtimes_own(ctx, refused)
                mine = await ctx.output.send_file("secrets-list.txt", history_policy="transient")
            assert await mine.wait() == "delivered"
    assert [o.blocks[0].name for o in route.delivered] == ["secrets-list.txt"]


@pytest.mark.parametrize(("value", "field"), [
    ("keys/api.key", "private_files"),  # one path, not a list of them
    (None, "private_files"),
    (["ok.key", ""], "private_files[1]"),
    ([b"api.key"], "private_files[0]"),
    (["a\x00b"], "private_files[0]"),
])
async def test_bad_private_files_are_refused_by_name_before_anything_is_made(
        tmp_path, value, field) -> None:
    db = tmp_path / "state" / "t.db"
    with pytest.raises(ValidationError) as caught:
        async with tidings.open_runtime(db, workspace=tmp_path, private_files=value):
            pass
    assert caught.value.field == field
    assert not db.parent.exists()
