"""Ctrl-C (SIGINT) ends ``tidings chat --url`` with exit 130 and no traceback at every stage:
while it connects to a peer that says nothing, while it waits for ``welcome``, and once
connected. Before, a Ctrl-C during the websocket handshake was swallowed by trio-websocket
(its connect captures the KeyboardInterrupt and then waits on its reader task): the chat went
on until the welcome bound (exit 1), or, before that bound, for ever."""

from __future__ import annotations

import functools
import pathlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from trio_websocket import WebSocketRequest, serve_websocket

# As in a terminal: a suite started with SIGINT ignored would hand that on to the chat.
_CHAT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from tidings.supervisor.cli import main
sys.exit(main())
"""


async def _interrupted(url: str, tmp_path: pathlib.Path, reached: trio.Event | None
                       ) -> tuple[int, str]:
    """Run the chat at *url* (stdin left open), send SIGINT once *reached* is set (None: once
    the chat says it is connected), return its exit code and stderr."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", _CHAT, "chat", "--token", "gateway-test-token", "--url", url,
         "--conversation", "ctrl-c"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, cwd=tmp_path)
    stderr = b""
    connected = trio.Event()
    try:
        async with trio.open_nursery() as nursery:
            async def read_stderr() -> None:
                nonlocal stderr
                assert process.stderr is not None
                async for chunk in process.stderr:
                    stderr += chunk
                    if b"/help for commands" in stderr:
                        connected.set()
            nursery.start_soon(read_stderr)
            with trio.fail_after(60):
                await (connected if reached is None else reached).wait()
                process.send_signal(signal.SIGINT)
                code = await process.wait()
    finally:
        process.kill()
        if process.stdin is not None:
            await process.stdin.aclose()
        await process.wait()
    return code, stderr.decode()


@asynccontextmanager
async def _silent_tcp() -> AsyncIterator[tuple[str, trio.Event]]:
    connected = trio.Event()

    async def say_nothing(stream: trio.SocketStream) -> None:
        await stream.receive_some()  # the handshake's request: the client waits for an answer
        connected.set()
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        [listener] = await nursery.start(functools.partial(
            trio.serve_tcp, say_nothing, 0, host="127.0.0.1"))
        yield f"ws://127.0.0.1:{listener.socket.getsockname()[1]}", connected
        nursery.cancel_scope.cancel()


@asynccontextmanager
async def _silent_websocket() -> AsyncIterator[tuple[str, trio.Event]]:
    said_hello = trio.Event()

    async def never_welcome(request: WebSocketRequest) -> None:
        ws = await request.accept()
        await ws.get_message()
        said_hello.set()
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, never_welcome, "127.0.0.1", 0, None)
        yield f"ws://127.0.0.1:{server.port}", said_hello
        nursery.cancel_scope.cancel()


@pytest.mark.parametrize("peer", [
    pytest.param(_silent_tcp, id="during-the-handshake"),
    # A subprocess each (2 s): the long form only; the handshake case stands for both.
    pytest.param(_silent_websocket, id="waiting-for-welcome", marks=pytest.mark.slow),
])
async def test_ctrl_c_while_connecting_ends_the_chat_with_130(
        tmp_path: pathlib.Path, peer: Callable[[], Any]) -> None:
    async with peer() as (url, reached):
        code, stderr = await _interrupted(url, tmp_path, reached)
    assert "Traceback" not in stderr
    assert code == 130, stderr


async def test_ctrl_c_once_connected_ends_the_chat_with_130(
        rt, serve_gateway, tmp_path: pathlib.Path) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        code, stderr = await _interrupted(url, tmp_path, None)
    assert "Traceback" not in stderr
    assert code == 130, stderr
