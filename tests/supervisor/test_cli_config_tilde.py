"""A leading ``~`` of ``--config`` (``tidings serve``, ``tidings chat --local``) and of the chat's
``--token-file`` is the home directory, as it is in ``--db``, ``--workspace``, serve's
``--token-file`` and the file's paths. The shell leaves it as typed in ``--config=~/t.toml``
(no tilde expansion after ``=`` in an argument) or quoted, and these three read
``./~/t.toml``: "cannot read ~/t.toml", "no token file at ~/tok". The configuration file is
also one no turn may send (it may hold ``gateway.token``): the path serve kept for that was
``./~/t.toml`` too, not the file it read."""

from __future__ import annotations

import pathlib

import pytest

from tidings.supervisor._config import load_config
from tidings.supervisor.cli import main


@pytest.fixture
def home(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    return home


def test_serve_reads_its_config_from_the_home_directory(home: pathlib.Path, capsys) -> None:
    (home / "t.toml").write_text("[gateway]\nport = 99999\n")  # read: refused by its key
    assert main(["serve", "--config=~/t.toml"]) == 2
    err = capsys.readouterr().err
    assert "gateway.port: must be an integer 0-65535" in err, err


def test_the_config_file_serve_keeps_private_is_the_one_it_read(home: pathlib.Path) -> None:
    (home / "t.toml").write_text("[gateway]\nport = 0\n")
    config = load_config(pathlib.Path("~/t.toml"))
    assert config.config_path == home / "t.toml"


def test_a_local_chat_reads_its_config_from_the_home_directory(home: pathlib.Path,
                                                               capsys) -> None:
    (home / "t.toml").write_text('[channels.terminal]\ndispatch_mode = "nope"\n')
    assert main(["chat", "--local", "--db", str(home / "chat.db"), "--config=~/t.toml"]) == 2
    err = capsys.readouterr().err
    assert "channels.terminal.dispatch_mode: must be one of" in err, err


def test_the_chat_reads_its_token_file_from_the_home_directory(home: pathlib.Path,
                                                               capsys) -> None:
    (home / "tok").write_text("short\n")  # read: refused as no token
    assert main(["chat", "--url", "ws://127.0.0.1:1", "--token-file=~/tok"]) == 2
    err = capsys.readouterr().err
    assert f"--token-file: {home / 'tok'} does not hold a token" in err, err


def test_a_tilde_with_no_home_to_expand_it_to_is_refused_naming_the_option(
        home: pathlib.Path, capsys) -> None:
    assert main(["serve", "--config=~no_such_user_h118/t.toml"]) == 2
    assert "config: '~no_such_user_h118/t.toml' starts with ~" in capsys.readouterr().err
    assert main(["chat", "--url", "ws://127.0.0.1:1",
                 "--token-file=~no_such_user_h118/tok"]) == 2
    assert "--token-file: '~no_such_user_h118/tok' starts with ~" in capsys.readouterr().err


def test_a_refusal_of_a_home_config_is_in_the_logs_form_it_asks(home: pathlib.Path,
                                                                capsys) -> None:
    # The refusal's log form is read from the file again ([logging] json): by its path as
    # typed, ./~/t.toml, found nowhere, so the JSON line was missing.
    (home / "t.toml").write_text("[logging]\njson = true\n[gateway]\nport = 99999\n")
    assert main(["serve", "--config=~/t.toml"]) == 2
    err = capsys.readouterr().err
    assert '"event": "invalid_configuration", "key": "gateway.port"' in err, err
