"""``tidings chat ... 2>&-``: a closed stderr is a stderr the chat cannot write, as
``2>/dev/full`` is (f7e58f0): its lines are lost and nothing else changes. Python starts with
``sys.stderr`` None then, and ``print(text, file=None)`` writes to stdout: the chat's lines for
stderr (the banner, ``cannot connect``, a bad ``--url``) went into the transcript on stdout,
which a pipe or a file reads as what the agent said."""

from __future__ import annotations

import pathlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript


async def test_a_chat_whose_stderr_is_closed_writes_only_the_transcript(
        rt, serve_gateway, capsys) -> None:
    out = Transcript()

    async def lines() -> AsyncIterator[str]:
        yield "hello\n"

    async with serve_gateway(rt) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="closederr",
                              interactive=False)
        with trio.fail_after(20):
            # what run() passes for a closed stderr: sys.stderr is None
            code = await chat_over_websocket(options, lines(), out=out, err=None)
    assert code == 0
    assert out.getvalue().splitlines() == ["hello"]
    assert capsys.readouterr().out == ""  # the banner went nowhere, not to the process's stdout


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.parametrize(("url", "expected"), [("unreachable", 1), ("notaurl", 2)])
def test_the_command_with_stderr_closed_prints_nothing_on_stdout(
        tmp_path: pathlib.Path, url: str, expected: int) -> None:
    if url == "unreachable":
        url = f"ws://127.0.0.1:{_unused_port()}"
    result = subprocess.run(
        ["sh", "-c", 'exec "$@" 2>&-', "sh", sys.executable, "-m", "tidings.supervisor.cli",
         "chat", "--token", "chat-test-token", "--url", url], input=b"hello\n",
        stdout=subprocess.PIPE, timeout=60, cwd=tmp_path, check=False)
    assert (result.returncode, result.stdout) == (expected, b"")


def test_web_with_the_page_missing_and_stderr_closed_prints_nothing_on_stdout(
        tmp_path: pathlib.Path, monkeypatch, capsys) -> None:
    from tidings.supervisor import _chat_ws, cli

    monkeypatch.setattr(_chat_ws, "web_page", lambda: tmp_path / "chat.html")
    args = cli.build_parser(["chat"]).parse_args(["chat", "--web"])
    monkeypatch.setattr(sys, "stderr", None)
    assert _chat_ws.run(args) == 1
    assert capsys.readouterr().out == ""
