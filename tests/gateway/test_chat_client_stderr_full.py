"""``tidings chat --url ... 2>/dev/full``: a stderr the chat cannot write is not a reason to end
the chat nor to change its exit code. Before, the banner's write raised an ``OSError`` inside
the connection, taken for a connection that failed ("cannot connect", whose own write failed
too): the chat against a working server ended at once with a traceback nobody saw; a server
it could not reach or a bad ``--url`` ended the same way (exit 1 for a bad URL, not 2)."""

from __future__ import annotations

import contextlib
import os
import pathlib
import socket
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
import trio

from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript


@pytest.fixture
def full_stderr() -> AsyncIterator[object]:
    try:
        stream = open("/dev/full", "w")  # noqa: SIM115 (closed below)
    except FileNotFoundError:
        pytest.skip("no /dev/full")
    try:
        yield stream
    finally:
        with contextlib.suppress(OSError):  # what it holds fails to flush again: closed anyway
            stream.close()


async def test_a_chat_whose_stderr_is_full_chats_all_the_same(rt, serve_gateway,
                                                               full_stderr) -> None:
    out = Transcript()

    async def lines() -> AsyncIterator[str]:
        yield "hello\n"
        yield "again\n"

    async with serve_gateway(rt) as (_gateway, url):
        options = ChatOptions(url=url, token="gateway-test-token", conversation="fullerr",
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=full_stderr)
    assert code == 0
    assert out.getvalue().splitlines() == ["hello", "again"]


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def test_a_chat_that_cannot_connect_with_stderr_full_returns_1(full_stderr) -> None:
    async def lines() -> AsyncIterator[str]:
        yield "hello\n"

    options = ChatOptions(url=f"ws://127.0.0.1:{_unused_port()}", token="t",
                          conversation="fullerr", interactive=False)
    with trio.fail_after(20):
        code = await chat_over_websocket(options, lines(), out=Transcript(), err=full_stderr)
    assert code == 1


@pytest.mark.parametrize(("url", "expected"), [("unreachable", 1), ("notaurl", 2)])
def test_the_command_with_stderr_full_exits_with_its_documented_code(
        tmp_path: pathlib.Path, url: str, expected: int) -> None:
    if url == "unreachable":
        url = f"ws://127.0.0.1:{_unused_port()}"
    try:
        full = os.open("/dev/full", os.O_WRONLY)
    except FileNotFoundError:
        pytest.skip("no /dev/full")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--token",
             "chat-test-token", "--url", url], input=b"hello\n", stdout=subprocess.PIPE,
            stderr=full, timeout=60, cwd=tmp_path, check=False)
    finally:
        os.close(full)
    assert result.returncode == expected
    assert result.stdout == b""
