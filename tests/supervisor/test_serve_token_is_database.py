"""``tidings serve`` whose token file (``gateway.token_file`` / ``--token-file``) names the
database (``serve.db`` / ``--db``), or one of SQLite's files beside it: the database was
created first and the token file refused after (exit 2), leaving an empty database behind.
It is refused before anything is made, naming ``gateway.token_file``, also when the two
name one file by different spellings (relative and absolute, through a symlink)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest
import trio

import tidings
from tidings.errors import ConfigError
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl


async def _refused(db: str, token_file: pathlib.Path, workspace: pathlib.Path) -> ConfigError:
    config = load_config(db=db, port=0, workspace=str(workspace), token_file=token_file)
    async with trio.open_nursery() as nursery:  # a start that served fails, not hangs
        with pytest.raises(ConfigError) as caught:
            await nursery.start(serve, config, StopControl())
    assert caught.value.field == "gateway.token_file"
    assert "database" in caught.value.reason
    return caught.value


async def test_a_token_file_that_is_the_database_is_refused_before_it_is_made(tmp_path) -> None:
    db = tmp_path / "serve.db"
    await _refused(str(db), db, tmp_path)
    assert list(tmp_path.iterdir()) == []  # no empty database left behind


async def test_one_file_spelt_relative_and_absolute_is_refused(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    await _refused("serve.db", tmp_path / "serve.db", tmp_path)
    await _refused(str(tmp_path / "serve.db"), pathlib.Path("./serve.db"), tmp_path)
    assert list(tmp_path.iterdir()) == []


async def test_one_file_reached_through_a_symlink_is_refused(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (tmp_path / "link").symlink_to(data)
    await _refused(str(data / "serve.db"), tmp_path / "link" / "serve.db", tmp_path)
    (tmp_path / "token").symlink_to(data / "serve.db")  # dangling until the database exists
    await _refused(str(data / "serve.db"), tmp_path / "token", tmp_path)
    assert list(data.iterdir()) == []


async def test_an_existing_database_is_refused_saying_so(tmp_path) -> None:
    db = tmp_path / "serve.db"
    async with tidings.open_runtime(db, workspace=tmp_path):
        pass
    error = await _refused(str(db), tmp_path / "." / "serve.db", tmp_path)
    assert "is the database" in str(error)  # not "over 4096 bytes"


@pytest.mark.parametrize("suffix", ["-wal", "-shm", "-journal"])
async def test_a_token_file_that_is_one_of_sqlites_files_is_refused(tmp_path, suffix) -> None:
    db = tmp_path / "serve.db"
    await _refused(str(db), tmp_path / f"serve.db{suffix}", tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_exits_2_naming_the_flag_and_makes_nothing(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "serve", "--port", "0",
         "--db", "serve.db", "--token-file", str(tmp_path / "serve.db")],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL,
        check=False)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "gateway.token_file" in result.stderr
    assert list(tmp_path.iterdir()) == []


async def test_a_token_file_that_is_the_runtime_lock_is_refused_before_it_is_made(
        tmp_path) -> None:
    # <db>.runtime.lock is the runtime's own file beside the database: taken for the token
    # file, the database was made, then the lock's text refused as no token, leaving it behind.
    db = tmp_path / "serve.db"
    error = await _refused(str(db), tmp_path / "serve.db.runtime.lock", tmp_path)
    assert "runtime lock" in str(error)
    assert list(tmp_path.iterdir()) == []
