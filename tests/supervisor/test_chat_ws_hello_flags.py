"""``tidings chat --url`` refuses a ``--conversation`` or ``--token`` no gateway takes as bad
usage (exit 2, naming the flag) before it connects, as ``--local`` refuses such a
conversation. Before, it connected and the server closed the hello (``4000 bad hello:
hello.conversation: ...``, ``4001 unauthorized: bad token``): exit 1, as for a server that
refused, naming a field of the protocol the user never typed."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest


def chat(tmp_path: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--url", "ws://127.0.0.1:1",
         *args], input="hello\n", capture_output=True, text=True, timeout=60, cwd=tmp_path,
        check=False)


@pytest.mark.parametrize(("conversation", "says"), [
    ("", "must not be empty"),
    ("c" * 201, "must be at most 200 characters"),
    ("tab\there", "must be printable text"),
])
def test_a_conversation_no_gateway_takes_is_refused_by_name(tmp_path: pathlib.Path,
                                                             conversation: str,
                                                             says: str) -> None:
    result = chat(tmp_path, "--token", "chat-test-token", "--conversation", conversation)
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"tidings chat: --conversation: {says}\n"


@pytest.mark.parametrize("token", ["", "short", "has a space", "tab\tin-it-too"])
def test_a_token_no_gateway_takes_is_refused_by_name(tmp_path: pathlib.Path,
                                                      token: str) -> None:
    result = chat(tmp_path, "--token", token)
    assert result.returncode == 2, result.stderr
    assert result.stderr == ("tidings chat: --token: not a token (at least 8 printable "
                             "characters, no spaces)\n")
