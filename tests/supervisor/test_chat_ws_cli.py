"""``tidings chat --url``: a URL it cannot use, or a server it cannot reach, is one clear line on
stderr (never a traceback, never an empty reason)."""

from __future__ import annotations

import pathlib
import socket
import subprocess
import sys

import pytest


def chat(tmp_path: pathlib.Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--token", "chat-test-token",
         *args], input="hello\n", capture_output=True, text=True, timeout=60, cwd=tmp_path,
        check=False)


@pytest.mark.parametrize("url", ["notaurl", "http://127.0.0.1:8765", "ws://127.0.0.1:99999",
                                 "ws://:8765",
                                 # no host name (an empty label, one over 63 characters): the
                                 # name lookup raised UnicodeError, a traceback, exit 1
                                 "ws://a..b:8765", f"ws://{'a' * 64}.example:8765",
                                 # empty (--url "$URL", URL unset): was the default URL
                                 ""])
def test_a_url_it_cannot_use_is_refused_by_name(tmp_path: pathlib.Path, url: str) -> None:
    result = chat(tmp_path, "--url", url)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("tidings chat: --url: "), result.stderr


def test_a_server_it_cannot_reach_says_why(tmp_path: pathlib.Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = chat(tmp_path, "--url", f"ws://127.0.0.1:{port}")
    assert result.returncode == 1, result.stderr
    assert f"tidings chat: cannot connect to ws://127.0.0.1:{port}: " in result.stderr
    assert f"all attempts to connect to 127.0.0.1:{port} failed" in result.stderr


_INTERRUPTED = """
import argparse, signal, sys, trio
from tidings.supervisor import _chat_ws

# As in a terminal. A process started with SIGINT ignored (a suite run in the background by a
# shell without job control) hands that on: Python and trio then leave SIGINT ignored, as they
# should, and the signal raised below would do nothing (the run hung to its timeout).
signal.signal(signal.SIGINT, signal.default_int_handler)

async def chat(options, lines, *, out, err, line_limit):  # Ctrl-C lands in a task of a nursery
    async def interrupted():
        signal.raise_signal(signal.SIGINT)
        await trio.sleep_forever()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(interrupted)
        await trio.sleep_forever()

_chat_ws.chat_over_websocket = chat
sys.exit(_chat_ws.run(argparse.Namespace(
    web=False, url="ws://127.0.0.1:8765", token="chat-test-token", token_file=None,
    conversation="default", chunks=False)))
"""


def test_ctrl_c_ends_the_chat_with_130_and_no_traceback(tmp_path: pathlib.Path) -> None:
    result = subprocess.run([sys.executable, "-c", _INTERRUPTED], input="", capture_output=True,
                            text=True, timeout=60, cwd=tmp_path, check=False)
    assert "Traceback" not in result.stderr
    assert result.returncode == 130, result.stderr


_INTERRUPTED_AS_IT_DROPS = """
import argparse, sys, trio
from tidings.channels import GatewayClosed
from tidings.supervisor import _chat_ws

# Ctrl-C and a drop, out of one nursery at once
async def chat(options, lines, *, out, err, line_limit):
    dropped = trio.Event()
    async def drop():
        await dropped.wait()
        raise GatewayClosed(1006, "dropped")
    async def interrupt():
        dropped.set()
        raise KeyboardInterrupt
    async with trio.open_nursery() as nursery:
        nursery.start_soon(drop)
        nursery.start_soon(interrupt)
    return 0

_chat_ws.chat_over_websocket = chat
sys.exit(_chat_ws.run(argparse.Namespace(
    web=False, url="ws://127.0.0.1:8765", token="chat-test-token", token_file=None,
    conversation="default", chunks=False)))
"""


def test_ctrl_c_as_the_connection_drops_ends_the_chat_with_130_and_no_traceback(
        tmp_path: pathlib.Path) -> None:
    result = subprocess.run([sys.executable, "-c", _INTERRUPTED_AS_IT_DROPS], input="",
                            capture_output=True, text=True, timeout=60, cwd=tmp_path,
                            check=False)
    assert "Traceback" not in result.stderr
    assert result.returncode == 130, result.stderr


def test_a_url_that_is_a_web_server_says_so_in_one_line(tmp_path: pathlib.Path) -> None:
    """Not the HTTP response (headers and a body of any size and bytes, say a web page) that
    trio-websocket puts in its error."""
    body = b"<html>\x1b[2J" + b"page " * 2000 + b"\n</html>\n"
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        port = server.getsockname()[1]
        chatting = subprocess.Popen(
            [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--token",
             "chat-test-token", "--url", f"ws://127.0.0.1:{port}"], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
        try:
            conn, _ = server.accept()
            with conn:
                request = b""
                while b"\r\n\r\n" not in request:
                    request += conn.recv(4096)
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: "
                             + str(len(body)).encode() + b"\r\n\r\n" + body)
                _, stderr = chatting.communicate(b"hello\n", timeout=60)
        finally:
            chatting.kill()
            chatting.wait()
    assert chatting.returncode == 1, stderr
    assert stderr.decode() == (f"tidings chat: cannot connect to ws://127.0.0.1:{port}: the "
                               "server answered HTTP 200, not a websocket handshake (not a "
                               "tidings gateway?)\n")
