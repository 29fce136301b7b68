"""``tidings chat`` refuses a flag of the other mode, naming it, before anything is opened.
``--db``, ``--agent``, ``--config``, ``--channel`` and ``--workspace`` are the local chat's
(the server of ``--url`` has its own database, agent and channel); ``--token``,
``--token-file`` and ``--web`` the websocket client's. Before, they were ignored: ``tidings
chat --agent mypkg:Bot`` (``--local`` forgotten) talked to whatever served on the default URL
with that server's agent, or said only that there was no token file; ``tidings chat --local
--web`` started a chat instead of printing the page."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest


def chat(tmp_path: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", *args], input="hello\n",
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)


@pytest.mark.parametrize("flag", [
    ["--db", "other.db"], ["--agent", "tidings.channels:EchoAgent"],
    ["--config", "tidings.toml"], ["--channel", "ops"], ["--workspace", "work"],
    # logs the local runtime's events: the websocket client has no runtime (it was ignored)
    ["--verbose"]])
def test_a_local_flag_without_local_is_refused_by_name(tmp_path: pathlib.Path,
                                                        flag: list[str]) -> None:
    result = chat(tmp_path, "--url", "ws://127.0.0.1:1", "--token", "chat-test-token", *flag)
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"tidings chat: {flag[0]}: only with --local\n"
    assert result.stdout == ""


@pytest.mark.parametrize("flag", [["--token", "chat-test-token"], ["--token-file", "t.token"],
                                  ["--web"]])
def test_a_websocket_flag_with_local_is_refused_by_name(tmp_path: pathlib.Path,
                                                         flag: list[str]) -> None:
    result = chat(tmp_path, "--local", "--db", str(tmp_path / "chat.db"), *flag)
    assert result.returncode == 2, result.stderr
    assert result.stderr == f"tidings chat: {flag[0]}: not with --local\n"
    assert result.stdout == ""
    assert not (tmp_path / "chat.db").exists()  # refused before anything was opened


def test_the_help_says_where_the_chat_connects_without_local(tmp_path: pathlib.Path) -> None:
    # It said only "connect to a running `tidings serve`" and "--local runs everything in
    # this process": not that the chat without either talks to ws://127.0.0.1:8765, with the
    # token of ./tidings.db.token, and --local on its own database.
    result = chat(tmp_path, "--help")
    assert result.returncode == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "by default with the one a running `tidings serve` runs (ws://127.0.0.1:8765" in text
    assert "./tidings.db.token" in text.split("options:")[0]
    assert "--url URL connect to a running `tidings serve` (default: ws://127.0.0.1:8765)" in text
    assert "a database of its own" in text
