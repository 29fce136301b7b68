"""``open_runtime`` on a path that holds something other than a tidings database refuses it
with a :class:`StoreError` and leaves nothing beside it: the runtime lock it had created
(``<path>.runtime.lock``) was left next to the user's file."""

from __future__ import annotations

import os
import sqlite3

import pytest

import tidings
from tidings.errors import StoreError


def _text_file(path):
    path.write_text("my notes\n")


def _other_sqlite(path):
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (body TEXT)")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("make", [_text_file, _other_sqlite], ids=["text", "other-sqlite"])
async def test_a_file_that_is_no_tidings_database_is_refused_and_nothing_is_left(
        tmp_path, workspace, make) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    path = folder / "notes.db"
    make(path)
    content = path.read_bytes()
    with pytest.raises(StoreError):
        async with tidings.open_runtime(path, workspace=workspace):
            pass
    assert os.listdir(folder) == ["notes.db"]
    assert path.read_bytes() == content


async def test_a_lock_file_that_was_there_is_left_there(db_path, workspace) -> None:
    """Only a lock file this open created is removed: an existing one (the database's, from
    earlier runs) stays."""
    async with tidings.open_runtime(db_path, workspace=workspace):
        pass
    lock = db_path.with_name(db_path.name + ".runtime.lock")
    assert lock.exists()
    db_path.write_text("broken\n")  # the database was replaced by something else
    with pytest.raises(StoreError):
        async with tidings.open_runtime(db_path, workspace=workspace):
            pass
    assert lock.exists()
