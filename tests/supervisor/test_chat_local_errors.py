"""``tidings chat --local`` refuses a config file or a database it cannot use with one line on
stderr and exit 2, never a traceback."""

from __future__ import annotations

import pathlib
import subprocess
import sys


def chat(tmp_path: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
         "--workspace", str(tmp_path), *args],
        input="hello\n", capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)


def test_a_config_file_that_is_not_utf8_is_refused(tmp_path: pathlib.Path) -> None:
    config = tmp_path / "tidings.toml"
    config.write_bytes(b"[channels.terminal]\ninstructions = \"\xff\xfe\"\n")
    result = chat(tmp_path, "--db", str(tmp_path / "chat.db"), "--config", str(config))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert "tidings chat: config: " in result.stderr
    assert "UTF-8" in result.stderr
    assert not (tmp_path / "chat.db").exists()


def test_a_file_that_is_not_a_database_is_refused(tmp_path: pathlib.Path) -> None:
    db = tmp_path / "notes.db"
    db.write_text("these are notes, not a database\n" * 10)
    result = chat(tmp_path, "--db", str(db))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"tidings chat: --db: cannot open the database {db}: file is not a database" \
        in result.stderr


def test_a_database_path_that_is_a_directory_is_refused_naming_db(
        tmp_path: pathlib.Path) -> None:
    # Said as "database path '...' is a directory", without the option that gave the path.
    folder = tmp_path / "state"
    folder.mkdir()
    result = chat(tmp_path, "--db", str(folder))
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"tidings chat: --db: database path '{folder}' is a directory\n"
    assert list(folder.iterdir()) == []


def test_a_bad_channel_name_is_refused_as_the_option_given(tmp_path: pathlib.Path,
                                                           capsys) -> None:
    # Said as "name: ...", the error named a key the user never wrote.
    from tidings.supervisor.cli import main

    for name in ("Bad", ""):
        code = main(["chat", "--local", "--db", str(tmp_path / "chat.db"), "--channel", name])
        err = capsys.readouterr().err
        assert code == 2
        assert err.startswith(f"tidings chat: --channel: channel name must be a lowercase "
                              f"identifier matching ^[a-z][a-z0-9_]*$, got {name!r}"), err
    assert not (tmp_path / "chat.db").exists()


def test_a_config_agent_it_cannot_load_is_refused_before_the_database_is_made(
        tmp_path: pathlib.Path) -> None:
    # --agent was loaded up front, the config's agent only by the channel, once the runtime
    # had made (and migrated) the database: a typo in the file left a new chat.db behind.
    config = tmp_path / "tidings.toml"
    config.write_text('[channels.terminal]\nagent = "no_such_module:Agent"\n')
    result = chat(tmp_path, "--db", str(tmp_path / "chat.db"), "--config", str(config))
    assert result.returncode == 2, result.stderr
    assert result.stderr == ("tidings chat: channels.terminal.agent: cannot import module "
                             "'no_such_module': No module named 'no_such_module'\n")
    assert not (tmp_path / "chat.db").exists()


def test_a_database_or_workspace_it_cannot_use_is_refused_as_the_option_given(
        tmp_path: pathlib.Path) -> None:
    # Said as open_runtime's parameters (db_path: ..., workspace: ...), keys the user never
    # wrote.
    empty_db = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local", "--db", ""],
        input="hello\n", capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert empty_db.returncode == 2, empty_db.stderr
    assert empty_db.stderr.startswith("tidings chat: --db: must be a non-empty path"), \
        empty_db.stderr
    no_workspace = chat(tmp_path, "--db", str(tmp_path / "chat.db"), "--workspace",
                        str(tmp_path / "missing"))
    assert no_workspace.returncode == 2, no_workspace.stderr
    assert no_workspace.stderr == (f"tidings chat: --workspace: not a directory: "
                                   f"{tmp_path / 'missing'}\n")
    assert not (tmp_path / "chat.db").exists()


def test_an_empty_agent_is_refused_as_the_option_given(tmp_path: pathlib.Path, capsys) -> None:
    # --agent "" (a script's --agent "$AGENT" with AGENT unset) was taken for no --agent: the
    # config's agent or EchoAgent chatted, and nothing said the flag was not used.
    from tidings.supervisor.cli import main

    code = main(["chat", "--local", "--db", str(tmp_path / "chat.db"), "--workspace",
                 str(tmp_path), "--agent", ""])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err == "tidings chat: --agent: must look like 'package.module:Name', got ''\n"
    assert not (tmp_path / "chat.db").exists()
