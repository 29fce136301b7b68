"""A database whose runtime lock file or path the system refuses (another user's lock file,
0600 and theirs; a read-only folder; a full disk; a directory where the lock file goes; a name
that, with ``.runtime.lock``, is over the file system's limit) is refused with a
:class:`StoreError` naming the database, as README (Opening) says of a path that holds
something else: the system's OSError came out bare, which a host catching StoreError around
``open_runtime`` did not catch, and ``tidings chat --local`` died of with a traceback."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

import tidings
from tidings.errors import StoreError
from tidings.store import open_store


def _lock_is_a_directory(tmp_path: pathlib.Path) -> pathlib.Path:
    db = tmp_path / "tidings.db"
    (tmp_path / "tidings.db.runtime.lock").mkdir()
    return db


def _lock_name_too_long(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / ("d" * 247 + ".db")  # 250 bytes: a file name; with the suffix, none


@pytest.mark.parametrize("make", [_lock_is_a_directory, _lock_name_too_long],
                         ids=["lock-is-a-directory", "lock-name-too-long"])
async def test_a_lock_file_the_system_refuses_is_a_store_error_naming_the_database(
        tmp_path, workspace, make) -> None:
    db = make(tmp_path)
    before = sorted(path.name for path in tmp_path.iterdir())
    with pytest.raises(StoreError, match="runtime lock") as caught:
        async with tidings.open_runtime(db, workspace=workspace):
            pass
    assert str(db) in str(caught.value)
    assert sorted(path.name for path in tmp_path.iterdir()) == before  # nothing created


async def test_a_path_the_store_cannot_create_is_a_store_error_naming_it(tmp_path) -> None:
    (tmp_path / "notes").write_text("a file, not a folder\n")
    db = tmp_path / "notes" / "tidings.db"
    with pytest.raises(StoreError, match="cannot open the database") as caught:
        async with open_store(db):
            pass
    assert str(db) in str(caught.value)


def test_tidings_chat_local_says_it_in_one_line(tmp_path) -> None:
    db = _lock_is_a_directory(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local", "--workspace",
         str(tmp_path), "--db", str(db)],
        input="hello\n", capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("tidings chat: ")
    assert "runtime lock" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not db.exists()
