"""``tidings serve --log-json`` refusing its configuration before logging is set up (a bad flag
or key that ``load_config`` finds): the log shipper of the JSON lines got only a plain line,
so it saw nothing of why the server never started. The refusal is an
``event=invalid_configuration`` JSON line first, as a refusal found as serve starts is (see
test_serve_log_json_warnings.py), then the one plain line, exit 2, nothing made."""

from __future__ import annotations

import json
import logging
import subprocess
import sys

import pytest

from tidings.supervisor.cli import main

from .serve_process import json_refusal


@pytest.fixture
def restore_logging():
    """Undo what ``configure_logging`` does to this process's logging (a handler on the root
    logger, its level, tidings' level, warnings captured)."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    tidings_level = logging.getLogger("tidings").level
    yield
    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    logging.getLogger("tidings").setLevel(tidings_level)
    logging.captureWarnings(False)




@pytest.mark.usefixtures("restore_logging")
@pytest.mark.parametrize(("flags", "key"), [
    (["--grace", "-1"], "serve.grace"),
    (["--agent", "not an import path"], "serve.agent"),
    (["--db", "state/"], "serve.db"),
], ids=["grace", "agent", "db"])
def test_a_flag_refused_with_log_json_is_a_json_event(tmp_path, monkeypatch, capsys, flags,
                                                     key) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--port", "0", "--log-json", *flags]) == 2
    json_refusal(capsys.readouterr().err, key)
    assert list(tmp_path.iterdir()) == []  # nothing made


@pytest.mark.usefixtures("restore_logging")
def test_a_file_asking_for_json_gets_its_refusal_as_a_json_event(tmp_path, monkeypatch,
                                                                 capsys) -> None:
    """``logging.json = true`` in the file asks for the JSON lines as the flag does; a
    warning read from the file before the refusal is a JSON line too, not plain text."""
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "tidings.toml"
    config.write_text('[logging]\njson = true\n[channels.gateway.memory_scope]\nmode = "shared"\n'
                      '[serve]\ngrace = -1\n')
    assert main(["serve", "--config", str(config), "--port", "0"]) == 2
    err = capsys.readouterr().err
    json_refusal(err, "serve.grace")
    warned = [json.loads(line) for line in err.splitlines()[:-1]
              if "memory_scope.mode" in line]
    assert [entry["level"] for entry in warned] == ["warning"]


def test_without_json_the_refusal_is_the_one_plain_line(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "--port", "0", "--grace", "-1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "tidings serve: invalid configuration: serve.grace: must be a number of seconds >= 0, "
        "got -1.0"]



_WARNED = '[channels.gateway.memory_scope]\nmode = "shared"\n[serve]\ngrace = -1\n'
"""A key taken with a warning (a memory mode that resolves to the only one) read before a bad
one: the warning is held until the log has its form, then said in it, or not at all."""


def _refused_stderr(tmp_path, text: str, *flags: str) -> list[str]:
    """``tidings serve --config FILE --port 0 *flags`` with *text* in FILE, as a process (its
    logging as the command sets it up, not pytest's): stderr's lines, once it exited 2."""
    (tmp_path / "tidings.toml").write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "serve", "--config", "tidings.toml",
         "--port", "0", *flags],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, stdin=subprocess.DEVNULL,
        check=False)
    assert result.returncode == 2, result.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "tidings.toml"]  # nothing made
    return result.stderr.splitlines()


@pytest.mark.parametrize(("table", "flags"), [
    ("", ["--log-level", "error"]),
    ('[logging]\nlevel = "error"\n', []),
    ('[logging]\nlevel = "error"\njson = true\n', []),
    ("", ["--log-level", "error", "--log-json"]),
], ids=["flag", "file", "file-json", "flag-json"])
def test_a_refusal_at_level_error_says_no_warning_of_the_file(tmp_path, table, flags) -> None:
    """README: ``--log-level error`` (or ``logging.level``) hides a warning about the config
    file as it hides tidings' own. Before a refusal the held warning was said all the same,
    as plain text without JSON, whatever level was asked for."""
    lines = _refused_stderr(tmp_path, _WARNED + table, *flags)
    assert not [line for line in lines if "memory_scope.mode" in line], lines
    assert lines[-1].startswith("tidings serve: invalid configuration: serve.grace: ")


def test_a_refusal_without_json_says_the_files_warning_as_a_log_line(tmp_path) -> None:
    """README: a warning about the config file is logged as tidings' own lines are
    (``key=value``), not printed as plain text between them; so also before a refusal."""
    warned, refused = _refused_stderr(tmp_path, _WARNED)
    assert " level=warning logger=tidings.channels message=" in warned, warned
    assert "memory_scope.mode: unknown memory mode 'shared'" in warned
    assert refused.startswith("tidings serve: invalid configuration: serve.grace: ")
