"""A file's path given as a folder's (ending with /): ``tidings serve --db state/`` made a
database *file* named ``state`` (and ``state.token`` beside it), pathlib dropping the slash,
where the user named a folder (``open("state/", O_CREAT)`` is refused by the system:
EISDIR); ``tidings status --db x.db/`` and ``tidings prune x.db/`` read and pruned ``x.db``.
Each is refused by the option or key it came from, nothing made. A workspace is a folder:
``serve.workspace = "ws/"`` is taken as before."""

from __future__ import annotations

import pathlib

import pytest

from tidings.errors import ConfigError
from tidings.supervisor import cli
from tidings.supervisor._config import load_config

from ..database_template import fresh_database


def test_serve_refuses_a_database_given_as_a_folder(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    # (a workspace it refuses later: were the path taken, this would not serve)
    assert cli.main(["serve", "--db", "state/", "--port", "0",
                     "--workspace", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert "tidings serve: invalid configuration: serve.db: " in err
    assert "ends with /" in err
    assert list(tmp_path.iterdir()) == []  # no database, lock or token file named state


@pytest.mark.parametrize(("text", "field"), [
    ('[serve]\ndb = "state/"\n', "serve.db"),
    ('[gateway]\ntoken_file = "secrets/"\n', "gateway.token_file"),
])
def test_a_file_key_given_as_a_folder_is_refused_naming_it(tmp_path, text, field) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="ends with /") as caught:
        load_config(path)
    assert caught.value.field == field


def test_a_workspace_given_as_a_folder_is_taken(tmp_path) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text('[serve]\nworkspace = "ws/"\n')
    assert load_config(path).workspace == pathlib.Path("ws")


@pytest.mark.parametrize("argv", [
    ["status", "--db", "x.db/"],
    ["prune", "x.db/", "--older-than", "1d"],
    ["serve", "--token-file", "x.db/", "--port", "0"],
    ["serve", "--config", "x.db/"],
    ["chat", "--local", "--db", "x.db/"],
])
def test_a_file_option_given_as_a_folder_is_bad_usage(tmp_path, monkeypatch, capsys,
                                                      argv) -> None:
    monkeypatch.chdir(tmp_path)
    fresh_database(tmp_path / "x.db")  # a database there: the slash was dropped, it was used
    before = sorted(tmp_path.iterdir())
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "expected a file's path" in err
    assert "x.db/" in err
    assert sorted(tmp_path.iterdir()) == before
