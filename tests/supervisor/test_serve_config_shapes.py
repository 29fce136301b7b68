"""Mistyped shapes of a ``tidings serve`` file: each refused naming its key (the file and
line for a file that is not TOML), exit 2, before anything is opened or written."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from tidings.errors import ConfigError
from tidings.supervisor._config import load_config


@pytest.mark.parametrize(("text", "field"), [
    ("channels = 5\n", "channels"),
    ("channels = { gateway = 5 }\n", "channels.gateway"),
    ("[[channels]]\nname = \"gateway\"\n", "channels"),
    ("agent = \"pkg.mod:Agent\"\n", "agent"),  # [serve] agent written at the top level
    ("serve = \"x\"\n", "serve"),
    ("[gateway]\nport = \"8080\"\n", "gateway.port"),
    ("[gateway]\nport = true\n", "gateway.port"),
    ("[serve]\ngrace = \"5s\"\n", "serve.grace"),
    ("[serve]\ngrace = nan\n", "serve.grace"),
    ("[supervisor]\nperiod = \"1m\"\n", "supervisor.period"),
    ("[channels.gateway]\nturn_timeout = \"2m\"\n", "channels.gateway.turn_timeout"),
])
def test_a_mistyped_shape_is_refused_naming_the_key(tmp_path, text: str, field: str) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.field == field


@pytest.mark.parametrize("text", [
    "[channels.gateway]\ndispatch_mode = \"steer\"\n[channels.gateway]\naccess = \"open\"\n",
    "[serve]\ngrace = 1\ngrace = 2\n",
])
def test_a_duplicate_is_refused_with_the_file_and_line(tmp_path, text: str) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=rf"^config: {path} is not valid TOML: .*line 3"):
        load_config(path)


def test_an_empty_file_is_every_default(tmp_path) -> None:
    path = tmp_path / "tidings.toml"
    path.write_text("# nothing set yet\n")
    assert load_config(path) == load_config()


def test_a_refused_file_exits_2_in_one_line_and_creates_nothing(tmp_path) -> None:
    (tmp_path / "tidings.toml").write_text("[gateway]\nport = \"8080\"\n")
    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "serve", "--config", "tidings.toml"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL,
        check=False)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "tidings serve: invalid configuration: gateway.port: must be an integer 0-65535 "
        "(0: any free port), got '8080'"]
    assert sorted(p.name for p in pathlib.Path(tmp_path).iterdir()) == ["tidings.toml"]


@pytest.mark.parametrize(("text", "field"), [
    ('[serve]\ndb = "x\\u0000y.db"\n', "serve.db"),
    ('[serve]\nworkspace = "x\\u0000y"\n', "serve.workspace"),
    ('[gateway]\ntoken_file = "x\\u0000y"\n', "gateway.token_file"),
])
def test_a_path_with_a_nul_character_is_refused_naming_the_key(tmp_path, text: str,
                                                              field: str) -> None:
    # TOML's "\u0000" is the one way a NUL reaches a path (argv cannot hold one): the OS
    # takes no such path, and it was found out late, as a ValueError traceback (the token
    # file's only once the database had been created).
    path = tmp_path / "tidings.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match="NUL") as caught:
        load_config(path)
    assert caught.value.field == field
    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "serve", "--config", "tidings.toml",
         "--port", "0"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL,
        check=False)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"tidings serve: invalid configuration: {field}: ")
    assert sorted(p.name for p in pathlib.Path(tmp_path).iterdir()) == ["tidings.toml"]


def test_a_file_over_the_size_limit_is_refused_by_name_before_it_is_read_whole(
        tmp_path) -> None:
    # The file was read whole into memory before anything looked at it: --config /dev/zero
    # (or a log or dump given by mistake) ended in a MemoryError traceback, exit 1, after
    # taking all the memory it could.
    from tidings.supervisor._config import MAX_CONFIG_BYTES

    path = tmp_path / "tidings.toml"
    path.write_text("# a comment\n" * (MAX_CONFIG_BYTES // 12 + 1))  # valid TOML, too big
    with pytest.raises(ConfigError, match=rf"^config: {path} is over {MAX_CONFIG_BYTES} "
                                          "bytes") as caught:
        load_config(path)
    assert caught.value.field == "config"
    path.write_text("# a comment\n" * (MAX_CONFIG_BYTES // 12 - 1))
    assert load_config(path) == load_config()  # under the limit: read as ever


def test_a_file_with_no_end_is_refused_exit_2_in_one_line_and_creates_nothing(
        tmp_path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "serve", "--config", "/dev/zero",
         "--port", "0"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL,
        check=False)
    assert result.returncode == 2, result.stderr[-2000:]
    [line] = result.stderr.splitlines()
    assert line.startswith("tidings serve: invalid configuration: config: /dev/zero is over ")
    assert list(pathlib.Path(tmp_path).iterdir()) == []


@pytest.mark.parametrize("flag", ["--config", "--token-file"])
def test_an_empty_path_flag_is_refused_as_such(tmp_path, capsys, monkeypatch, flag) -> None:
    # "" was taken for the current directory: 'config: cannot read .: Is a directory' and
    # 'gateway.token_file: /the/cwd is not a regular file', paths the user never gave (as
    # tidings prune's DB was, 388bc3a).
    from tidings.supervisor import cli

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", flag, "", "--port", "0"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: expected a path, got an empty string" in err
    assert "directory" not in err
    assert "regular file" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_file_saved_with_a_byte_order_mark_is_refused_saying_so(tmp_path) -> None:
    # Some editors save UTF-8 with a byte order mark first: TOML takes none, and the refusal
    # was 'Invalid statement (at line 1, column 1)' on a first line that reads [gateway].
    path = tmp_path / "tidings.toml"
    path.write_bytes(b"\xef\xbb\xbf[gateway]\nport = 0\n")
    with pytest.raises(ConfigError, match=rf"^config: {path} starts with a byte order mark "
                                          r"\(U\+FEFF\): TOML files are UTF-8 without one") \
            as caught:
        load_config(path)
    assert caught.value.field == "config"
