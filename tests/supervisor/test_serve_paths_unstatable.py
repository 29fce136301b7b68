"""``tidings serve`` given a path it cannot even look at (a name over the file system's limit,
a folder it may not search): refused naming the key, exit 2, nothing created, never a
traceback."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

import tidings
from tidings.errors import ConfigError, ValidationError
from tidings.supervisor._config import load_config
from tidings.supervisor._serve import serve
from tidings.supervisor._signals import StopControl

TOO_LONG = "a" * 300  # over NAME_MAX (255): stat() fails with ENAMETOOLONG, even for root


async def test_a_token_file_that_cannot_be_looked_at_is_refused_by_name(tmp_path) -> None:
    config = load_config(db=str(tmp_path / "serve.db"), port=0, workspace=str(tmp_path),
                         token_file=tmp_path / TOO_LONG)
    with pytest.raises(ConfigError, match=r"^gateway\.token_file: cannot read .*File name too "
                                          r"long") as caught:
        await serve(config, StopControl())
    assert caught.value.field == "gateway.token_file"
    assert list(tmp_path.iterdir()) == []  # no database either


async def test_a_database_whose_token_file_cannot_be_looked_at_is_refused_by_its_name(
        tmp_path) -> None:
    # The default token file is beside the database: the key to blame is the one given.
    config = load_config(db=str(tmp_path / f"{TOO_LONG}.db"), port=0, workspace=str(tmp_path))
    with pytest.raises(ConfigError, match=r"^serve\.db: cannot read .*File name too long"):
        await serve(config, StopControl())
    assert list(tmp_path.iterdir()) == []


def test_the_command_line_exits_2_in_one_line(tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "serve", "--port", "0",
         "--db", f"{TOO_LONG}.db"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL,
        check=False)
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("tidings serve: invalid configuration: serve.db: ")
    assert sorted(p.name for p in pathlib.Path(tmp_path).iterdir()) == []


async def test_a_workspace_that_cannot_be_looked_at_is_refused_by_its_name(tmp_path) -> None:
    # Not "cannot open the database ... (serve.db)": the database is fine, the workspace not.
    config = load_config(db=str(tmp_path / "serve.db"), port=0,
                         workspace=str(tmp_path / TOO_LONG))
    with pytest.raises(ConfigError, match=r"^serve\.workspace: cannot read .*File name too "
                                          r"long") as caught:
        await serve(config, StopControl())
    assert caught.value.field == "serve.workspace"
    assert list(tmp_path.iterdir()) == []


async def test_open_runtime_refuses_such_an_artifact_root_by_name(tmp_path) -> None:
    with pytest.raises(ValidationError, match=r"^artifact_root: cannot read ") as caught:
        async with tidings.open_runtime(tmp_path / "serve.db", workspace=tmp_path,
                                        artifact_root=tmp_path / TOO_LONG):
            pass  # pragma: no cover
    assert caught.value.field == "artifact_root"
    assert list(tmp_path.iterdir()) == []


async def test_a_database_path_that_cannot_be_resolved_is_refused_as_serve_db(tmp_path) -> None:
    # open_runtime names it db_path, its own argument: serve said 'serve.db_path: cannot be
    # resolved: Symlink loop ...', a key no file and no flag has (it is serve.db, --db).
    (tmp_path / "a.db").symlink_to(tmp_path / "b.db")
    (tmp_path / "b.db").symlink_to(tmp_path / "a.db")
    config = load_config(db=str(tmp_path / "a.db"), port=0, workspace=str(tmp_path))
    with pytest.raises(ConfigError, match=r"^serve\.db: cannot be resolved") as caught:
        await serve(config, StopControl())
    assert caught.value.field == "serve.db"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a.db", "b.db"]


def test_a_current_directory_removed_under_it_is_refused_by_name(tmp_path) -> None:
    # The relative database (and its token file beside it) cannot be made absolute when the
    # directory the command runs in was removed (a release folder replaced under the shell):
    # an ExceptionGroup traceback of getcwd's FileNotFoundError, exit 1.
    gone = tmp_path / "gone"
    script = ("import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
              "from tidings.supervisor import cli; sys.exit(cli.main(sys.argv[2:]))")
    for argv in (["serve", "--port", "0"],
                 ["serve", "--port", "0", "--db", str(tmp_path / "x.db"), "--token-file",
                  "relative.token"]):
        gone.mkdir()  # and removed by the command, once it is in it
        result = subprocess.run([sys.executable, "-c", script, str(gone), *argv],
                                capture_output=True, text=True, timeout=60,
                                stdin=subprocess.DEVNULL, check=False)
        field = "serve.db" if "--db" not in argv else "gateway.token_file"
        assert result.returncode == 2, result.stderr[-3000:]
        assert result.stderr.splitlines() == [
            f"tidings serve: invalid configuration: {field}: cannot be made absolute: the "
            "current directory is gone (No such file or directory)"], result.stderr[-3000:]
    assert list(tmp_path.iterdir()) == []
