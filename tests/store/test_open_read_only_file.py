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

import json
import os
import pathlib
import shutil
import subprocess
import sys

import attrs
import pytest
import trio

from tidings.store import open_store

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or (os.geteuid() == 0 and not shutil.which("setpriv")),
    reason="needs a process that file modes stop (setpriv, to drop root's capabilities)")

HOWS = ("open_store", "prune")
READ_ONLY = ("", "-wal", "-shm")

_OPEN = """
import json, sys, traceback, trio
from tidings.errors import StoreError
from tidings.store import open_store, prune_file

async def main(how, path):
    if how == "prune":
        prune_file(path, 0.0)
    else:
        async with open_store(path):
            pass

for how, path in zip(sys.argv[1::2], sys.argv[2::2], strict=True):
    try:
        trio.run(main, how, path)
        said = "opened"
    except StoreError as exc:
        said = f"StoreError: {exc}"
    except Exception:
        said = traceback.format_exc()
    print(json.dumps(said), flush=True)
"""


def _open_unprivileged(attempts: list[tuple[str, pathlib.Path]]) -> list[str]:
    """What opening (or pruning) each database says, in turn, in one child process that file
    modes stop (a new process per case cost 0.2 s of start-up each, twice per case)."""
    command = [sys.executable, "-c", _OPEN, *(str(arg) for case in attempts for arg in case)]
    if os.geteuid() == 0:
        command = ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
                   "--bounding-set=-dac_override,-dac_read_search", *command]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    said = [json.loads(line) for line in result.stdout.splitlines()]
    assert len(said) == len(attempts), result.stdout + result.stderr
    return said


async def _a_stopped_database(db: pathlib.Path) -> None:
    async with open_store(db):
        pass
    for suffix in ("-wal", "-shm"):  # as a copy of the file alone leaves it
        db.with_name(db.name + suffix).unlink(missing_ok=True)


@attrs.frozen
class Attempt:
    """One case: what its child said while *culprit* was read-only (``refused``) and after
    the operator put it right (``opened``), and its directory before and after the first."""

    culprit: pathlib.Path
    before: list[str]
    refused: str
    after: list[str]
    opened: str


def _listing(directory: pathlib.Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir())


@pytest.fixture(scope="module")
def attempts(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Attempt]:
    """Every case in a directory of its own: opened while one file is read-only in one child,
    then, every file put right, opened again in a second child (a new process, as the
    operator's next run)."""
    cases = [(read_only, how) for read_only in READ_ONLY for how in HOWS]
    dbs, culprits, before = {}, {}, {}
    for read_only, how in cases:
        directory = tmp_path_factory.mktemp(f"read-only{read_only}-{how}")
        db = dbs[read_only, how] = directory / "tidings.db"
        trio.run(_a_stopped_database, db)
        culprit = culprits[read_only, how] = db.with_name(db.name + read_only)
        culprit.touch()
        culprit.chmod(0o444)
        before[read_only, how] = _listing(directory)
    refused = _open_unprivileged([(case[1], dbs[case]) for case in cases])
    after = {case: _listing(dbs[case].parent) for case in cases}
    for case in cases:
        if culprits[case].exists():  # (an open that went through may have removed it)
            culprits[case].chmod(0o644)  # the operator puts it right: it opens
    opened = _open_unprivileged([(case[1], dbs[case]) for case in cases])
    return {case: Attempt(culprits[case], before[case], said, after[case], again)
            for case, said, again in zip(cases, refused, opened, strict=True)}


@pytest.mark.parametrize("how", HOWS)
@pytest.mark.parametrize("read_only", READ_ONLY, ids=["file", "wal", "shm"])
def test_a_database_it_may_not_write_is_refused_naming_it_and_nothing_is_made(
        attempts, read_only, how) -> None:
    attempt = attempts[read_only, how]
    said = attempt.refused
    assert said.startswith("StoreError:"), said
    assert str(attempt.culprit) in said
    assert "Permission denied" in said
    assert attempt.after == attempt.before  # nothing made
    assert attempt.opened == "opened"
