"""``tidings chat --web`` (print the browser client's path) with a stdout it cannot write
(``> /dev/full``, or closed: ``>&-``) says so in one line on stderr and exits 1, as the
chats do (README: "a stdout it cannot write such as ``> /dev/full`` or closed, ``>&-``: exit 1
with one line on stderr"). Before, its ``print`` raised out of the command: an ``OSError``
traceback. A reader that left (``| true``) is told nothing, exit 1, as for the chats."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

_CLI = [sys.executable, "-m", "tidings.supervisor.cli"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_stdout_is_said_in_one_line(tmp_path: pathlib.Path) -> None:
    with open("/dev/full", "w") as full:
        result = subprocess.run([*_CLI, "chat", "--web"], stdout=full, stderr=subprocess.PIPE,
                                text=True, timeout=60, cwd=tmp_path, check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "tidings chat: cannot write to stdout: [Errno 28] No space left on device"]


def test_a_closed_stdout_is_said_in_one_line(tmp_path: pathlib.Path) -> None:
    result = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *_CLI, "chat", "--web"],
                            capture_output=True, text=True, timeout=60, cwd=tmp_path,
                            check=False)
    assert result.returncode == 1, result.stderr
    assert result.stderr.splitlines() == [
        "tidings chat: cannot write to stdout: [Errno 9] Bad file descriptor"]


def test_a_reader_that_left_is_told_nothing(tmp_path: pathlib.Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader left before anything was written
    try:
        result = subprocess.run([*_CLI, "chat", "--web"], stdout=write,
                                stderr=subprocess.PIPE, text=True, timeout=60, cwd=tmp_path,
                                check=False)
    finally:
        os.close(write)
    assert result.returncode == 1, result.stderr
    assert result.stderr == ""


def test_a_stdout_that_takes_it_gets_the_page(tmp_path: pathlib.Path) -> None:
    result = subprocess.run([*_CLI, "chat", "--web"], capture_output=True, text=True,
                            timeout=60, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr
    page = pathlib.Path(result.stdout.strip())
    assert page.name == "chat.html"
    assert page.is_file()
    assert result.stderr == ""
