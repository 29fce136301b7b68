"""The command line with stderr closed (``tidings ... 2>&-``): what it would say on stderr is
lost, nothing of it goes to stdout, and the exit code is the one it has with a stderr.

Python starts with ``sys.stderr`` None then, and argparse's ``error`` prints the usage with
``print_usage(sys.stderr)``, which takes None for "stdout": the usage went to stdout, into
whatever reads it (``tidings status --json 2>&- | jq`` read a usage for a report)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest


def _run_closed(tmp_path: pathlib.Path, *argv: str) -> subprocess.CompletedProcess[str]:
    command = ["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-m",
               "tidings.supervisor.cli", *argv]
    return subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          text=True, timeout=60, cwd=tmp_path, check=False)


@pytest.mark.parametrize("argv", [
    [],  # no command: the help, on stderr
    ["nope"],  # argparse's invalid choice
    ["status", "--bogus"],  # a command's parser's error
    ["status", "--limit", "x"],  # a type's refusal
    ["status", "--db", "missing.db"],  # the command's own refusal
    ["status", "--db", "missing.db", "id", "--session", "s"],  # the command's parser.error
    ["serve", "--config", "missing.toml"],  # serve's refusal of its configuration
])
def test_a_refused_line_with_stderr_closed_prints_nothing_on_stdout(
        tmp_path: pathlib.Path, argv: list[str]) -> None:
    done = _run_closed(tmp_path, *argv)
    assert (done.returncode, done.stdout) == (2, "")


def test_help_asked_for_still_goes_to_stdout(tmp_path: pathlib.Path) -> None:
    done = _run_closed(tmp_path, "--help")
    assert done.returncode == 0
    assert done.stdout.startswith("usage: tidings")
