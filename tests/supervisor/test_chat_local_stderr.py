"""``tidings chat --local`` with a stderr it cannot write (``2>/dev/full``) or closed (``2>&-``)
chats as with any other: the lines for stderr are lost, nothing else changes, as for the
websocket chat (f7e58f0). Before, the banner's write raised ``OSError`` out of the runtime
(exit 1, nothing chatted, a traceback nobody saw) and, with stderr closed, ``print(file=None)``
wrote the banner to stdout, into the transcript."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest


@pytest.mark.parametrize("stderr", ["full", "closed"])
def test_a_local_chat_whose_stderr_cannot_be_written_chats_all_the_same(
        tmp_path: pathlib.Path, stderr: str) -> None:
    command = [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
               "--workspace", str(tmp_path), "--db", str(tmp_path / "chat.db")]
    if stderr == "full":
        try:
            target = os.open("/dev/full", os.O_WRONLY)
        except FileNotFoundError:
            pytest.skip("no /dev/full")
    else:
        command = ["sh", "-c", 'exec "$@" 2>&-', "sh", *command]
        target = os.open(os.devnull, os.O_WRONLY)  # not used: the shell closes fd 2
    try:
        result = subprocess.run(command, input="hello\n", stdout=subprocess.PIPE,
                                stderr=target, text=True, timeout=60, cwd=tmp_path,
                                check=False)
    finally:
        os.close(target)
    assert result.returncode == 0
    assert "terminal> hello" in result.stdout.splitlines()  # the echo agent's answer
    assert "tidings chat" not in result.stdout  # the banner went nowhere
