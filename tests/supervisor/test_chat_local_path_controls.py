"""``tidings chat --local`` prints a path with a control character (a newline in ``--db``, which
a file name may hold) as one line, as ``tidings status``, ``prune`` and ``serve`` do
(5196217): its refusals (a config file, a database in use or that is no database, a
workspace) and its banner printed it raw, so the line broke in two and an escape sequence
in a name reached the terminal. Escaped as they escape it (``\\x0a``)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from tidings.actors._runtime_lock import lock_database, unlock_database

from ..database_template import fresh_database

_NAME = "a\nb\x1b[2J.db"
_SHOWN = "a\\x0ab\\x1b[2J.db"


def _chat(tmp_path: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local", *args],
        input="", capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)


def _one_line(err: str) -> str:
    assert err.endswith("\n"), repr(err)
    assert err.count("\n") == 1, repr(err)
    assert "\x1b" not in err
    return err


@pytest.mark.parametrize("make", ["config", "text", "workspace", "held"])
def test_a_refusal_names_a_path_with_controls_in_one_line(tmp_path, make) -> None:
    path = tmp_path / _NAME
    args = ["--db", str(path), "--workspace", str(tmp_path)]
    fd = None
    if make == "config":  # no such file: a ConfigError naming it
        args += ["--config", str(path)]
        args[1] = str(tmp_path / "chat.db")
    elif make == "text":  # SQLite's "file is not a database"
        path.write_text("these are notes, not a database\n" * 10)
    elif make == "workspace":  # a TidingsError naming the option
        args[1], args[3] = str(tmp_path / "chat.db"), str(path)
    else:  # another runtime holds it
        fd, created = lock_database(fresh_database(path))
    try:
        result = _chat(tmp_path, *args)
    finally:
        if fd is not None:
            unlock_database(fd, created)
    assert result.returncode in (2, 3), result.stderr
    assert _one_line(result.stderr).startswith("tidings chat: ")
    # Escaped as serve's refusals are; a database in use is quoted (repr) by its error.
    assert (_SHOWN if make != "held" else repr(str(path))) in result.stderr


def test_the_banner_names_a_database_with_controls_in_one_line(tmp_path) -> None:
    result = _chat(tmp_path, "--db", str(tmp_path / _NAME), "--workspace", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert _one_line(result.stderr).startswith("tidings chat (local): ")
    assert f"database {_SHOWN}." in result.stderr
