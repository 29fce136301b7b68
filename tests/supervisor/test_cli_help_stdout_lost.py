"""``tidings --version`` and ``--help`` (a command's too) with a stdout they cannot write
(``> /dev/full``, ``>&-``) say so in one line on stderr and exit 1, as ``status`` and the chats
do (README: "a stdout it cannot write"). Before, argparse dropped the write's error and they
exited 0 having printed nothing: a script that checked ``tidings --version`` took it for a
success."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

_CLI = [sys.executable, "-m", "tidings.supervisor.cli"]


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["status", "--help"],
                                  ["chat", "--help"]])
def test_a_full_stdout_is_said_and_exits_1(tmp_path: pathlib.Path, argv: list[str]) -> None:
    with open("/dev/full", "w") as full:
        result = subprocess.run([*_CLI, *argv], stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=60, cwd=tmp_path, check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr == "tidings: cannot write to stdout: [Errno 28] No space left on " \
                            "device\n", result.stderr


@pytest.mark.parametrize("argv", [["--version"], ["--help"]])
def test_a_closed_stdout_is_said_and_exits_1(tmp_path: pathlib.Path, argv: list[str]) -> None:
    result = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *_CLI, *argv],
                            stderr=subprocess.PIPE, text=True, timeout=60, cwd=tmp_path,
                            check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr == "tidings: cannot write to stdout: [Errno 9] Bad file " \
                            "descriptor\n", result.stderr


def test_a_written_version_still_exits_0(tmp_path: pathlib.Path) -> None:
    result = subprocess.run([*_CLI, "--version"], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("tidings "), result.stdout
    assert result.stderr == ""
