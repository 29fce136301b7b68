"""``tidings chat --local`` with a stdout it cannot write ends as the websocket chat does (the
README: "a stdout it cannot write such as ``> /dev/full``: exit 1 with one line on stderr"),
even while its input stays open; a reader that left (``| head``) ends it with nothing said.
Before, every print raised ``OSError`` inside the runtime: the replies were recorded
``failed``, each lifecycle event logged a traceback, and the chat went on to exit 0."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest


def _command(tmp_path: pathlib.Path) -> list[str]:
    return [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
            "--workspace", str(tmp_path), "--db", str(tmp_path / "chat.db")]


def _dev_full() -> int:
    try:
        return os.open("/dev/full", os.O_WRONLY)
    except FileNotFoundError:
        pytest.skip("no /dev/full")


def test_a_stdout_it_cannot_write_ends_the_chat_with_one_line_and_exit_1(
        tmp_path: pathlib.Path) -> None:
    full = _dev_full()
    try:
        result = subprocess.run(_command(tmp_path), input="hello\nagain\n", stdout=full,
                                stderr=subprocess.PIPE, text=True, timeout=60, cwd=tmp_path,
                                check=False)
    finally:
        os.close(full)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    said = [line for line in result.stderr.splitlines()
            if not line.startswith("tidings chat (local): ")]  # the banner
    assert said == ["tidings chat: cannot write to stdout: [Errno 28] No space left on device"]


def test_a_stdout_it_cannot_write_ends_the_chat_while_its_input_stays_open(
        tmp_path: pathlib.Path) -> None:
    full = _dev_full()
    log = tmp_path / "stderr.txt"
    try:
        with log.open("w") as err:
            process = subprocess.Popen(_command(tmp_path), stdin=subprocess.PIPE, stdout=full,
                                       stderr=err, text=True, cwd=tmp_path)
    finally:
        os.close(full)
    assert process.stdin is not None
    try:
        process.stdin.write("hello\n")
        process.stdin.flush()  # and left open: only the chat's own end ends it
        process.wait(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdin.close()
    stderr = log.read_text()
    assert process.returncode == 1, stderr
    assert "tidings chat: cannot write to stdout: " in stderr
    assert "Traceback" not in stderr
    assert "Fatal Python error" not in stderr


def test_a_reader_that_left_ends_the_chat_with_nothing_said(tmp_path: pathlib.Path) -> None:
    read, write = os.pipe()
    os.close(read)  # `tidings chat --local | head -0`: the reader is gone
    try:
        result = subprocess.run(_command(tmp_path), input="hello\n", stdout=write,
                                stderr=subprocess.PIPE, text=True, timeout=60, cwd=tmp_path,
                                check=False)
    finally:
        os.close(write)
    assert result.returncode == 1, result.stderr
    said = [line for line in result.stderr.splitlines()
            if not line.startswith("tidings chat (local): ")]
    assert said == []
