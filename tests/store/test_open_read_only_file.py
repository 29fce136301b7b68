"""A database file this process may not write (restored from a backup as 0444, another
user's) was opened (``open_store``, ``open_runtime``, ``tidings prune``) as far as SQLite
goes: reading a WAL database made its ``-wal`` and ``-shm`` files, with the database file's
mode (0444), and only then did the first write fail,
"attempt to write a readonly database". Once the file's mode was put right, the read-only
``-shm`` left beside it refused every later open with that same message about a database that
was writable now. The file is now checked first: a :class:`StoreError` naming it and the
system's reason, and nothing made beside it; a ``-wal`` or ``-shm`` there that it may not
write is named the same way.

Run in a child process: this one may be root, whom no file mode stops (the child drops the
capabilities that let it pass them; as another user it needs none to drop)."""

from __future__ import annotations

import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import trio

from tidings.store import open_store

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or (os.geteuid() == 0 and not shutil.which("setpriv")),
    reason="needs a process that file modes stop (setpriv, to drop root's capabilities)")

_OPEN = """
import sys, trio
from tidings.errors import StoreError
from tidings.store import open_store, prune_file

async def main(how, path):
    try:
        if how == "prune":
            prune_file(path, 0.0)
        else:
            async with open_store(path):
                pass
        print("opened")
    except StoreError as exc:
        print("StoreError:", exc)

trio.run(main, *sys.argv[1:])
"""


def _open_unprivileged(db: pathlib.Path, how: str) -> str:
    """What opening (or pruning) *db* says in a child process that file modes stop."""
    command = [sys.executable, "-c", _OPEN, how, str(db)]
    if os.geteuid() == 0:
        command = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                   "--bounding-set=-dac_override,-dac_read_search", *command]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


async def _a_stopped_database(db: pathlib.Path) -> None:
    async with open_store(db):
        pass
    for suffix in ("-wal", "-shm"):  # as a copy of the file alone leaves it
        db.with_name(db.name + suffix).unlink(missing_ok=True)


@pytest.mark.parametrize("how", ["open_store", "prune"])
@pytest.mark.parametrize("read_only", ["", "-wal", "-shm"], ids=["file", "wal", "shm"])
def test_a_database_it_may_not_write_is_refused_naming_it_and_nothing_is_made(
        tmp_path, read_only, how) -> None:
    db = tmp_path / "tidings.db"
    trio.run(_a_stopped_database, db)
    culprit = db.with_name(db.name + read_only)
    culprit.touch()
    culprit.chmod(0o444)
    before = sorted(path.name for path in tmp_path.iterdir())
    said = _open_unprivileged(db, how)
    assert said.startswith("StoreError:")
    assert str(culprit) in said
    assert "Permission denied" in said
    assert sorted(path.name for path in tmp_path.iterdir()) == before  # nothing made
    culprit.chmod(0o644)  # the operator puts it right: it opens
    assert _open_unprivileged(db, how) == "opened"
