"""A path with a control character (a newline in ``--db``, which a file name may hold) is
printed as one line by ``tidings prune``, ``tidings status`` and ``tidings serve``: their
refusals printed it raw, so the line broke in two (a log reader took the rest for another
line) and an escape sequence in a name reached the terminal. It is escaped as ``tidings
status`` escapes what it prints (``\\x0a``), or quoted as a refusal quotes a value."""

from __future__ import annotations

import subprocess

import pytest
import trio

from tidings.supervisor import cli

from ..database_template import fresh_database
from .serve_process import environment, tidings_command

_NAME = "a\nb\x1b[2J.db"
_SHOWN = "a\\x0ab\\x1b[2J.db"


def _one_line(err: str) -> str:
    assert err.endswith("\n"), repr(err)
    assert err.count("\n") == 1, repr(err)
    assert "\x1b" not in err
    return err


@pytest.mark.parametrize("make", ["nothing", "folder", "text"])
def test_prune_names_a_path_with_controls_in_one_line(tmp_path, capsys, make) -> None:
    path = tmp_path / _NAME
    if make == "folder":
        path.mkdir()
    elif make == "text":
        path.write_text("notes, not a database\n")
    assert cli.main(["prune", str(path), "--older-than", "1d"]) == 2
    assert _SHOWN in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("make", ["folder", "text"])
def test_status_names_a_path_with_controls_in_one_line(tmp_path, capsys, make) -> None:
    path = tmp_path / _NAME
    if make == "folder":
        path.mkdir()
    else:
        path.write_text("notes, not a database\n")
    assert cli.main(["status", "--db", str(path)]) == 2
    _one_line(capsys.readouterr().err)


def test_status_of_an_unknown_delivery_names_the_database_in_one_line(tmp_path,
                                                                        capsys) -> None:
    path = fresh_database(tmp_path / _NAME)
    assert cli.main(["status", "--db", str(path), "dlv_missing"]) == 1
    err = _one_line(capsys.readouterr().err)
    assert "dlv_missing" in err
    assert _SHOWN in err


def test_serve_hint_for_a_database_given_as_a_folder_is_one_line(tmp_path, monkeypatch,
                                                                  capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["serve", "--db", "a\nb/", "--port", "0",
                     "--workspace", str(tmp_path / "missing")]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "serve.db" in err
    assert '"a\\nb/tidings.db"' in err  # TOML's basic string: it holds a newline
    assert list(tmp_path.iterdir()) == []


async def test_serve_that_cannot_open_the_database_names_it_in_one_line(tmp_path) -> None:
    db = tmp_path / _NAME
    db.write_text("these are notes, not a database\n" * 10)
    with trio.fail_after(60):  # hang guard (a real process)
        result = await trio.run_process(
            tidings_command("serve", "--db", str(db), "--port", "0"),
            capture_stderr=True, check=False, env=environment(), stdin=subprocess.DEVNULL)
    err = result.stderr.decode()
    assert result.returncode == 1, err
    lines = [line for line in err.splitlines() if line.startswith("tidings serve:")]
    assert len(lines) == 1, err
    assert f"cannot open the database {tmp_path}/{_SHOWN} (serve.db)" in lines[0]
    assert "\x1b" not in err
