"""``tidings chat --url`` ends when the chat ends, even while its input is still open: a
server it cannot reach (or that refuses it) is exit 1 at once, not a wait for the next line
(then an abort at interpreter exit, the stdin read still blocked in its thread)."""

from __future__ import annotations

import pathlib
import socket
import subprocess
import sys

import trio


async def test_an_unreachable_server_ends_the_chat_while_stdin_stays_open(
        tmp_path: pathlib.Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = await trio.lowlevel.open_process(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--token", "chat-test-token",
         "--url", f"ws://127.0.0.1:{port}"],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tmp_path)
    try:
        with trio.fail_after(20):  # its input never ends: only the chat's own end ends it
            stderr = b""
            while chunk := await process.stderr.receive_some(65536):
                stderr += chunk
            await process.wait()
        text = stderr.decode()
        assert process.returncode == 1, text
        assert f"tidings chat: cannot connect to ws://127.0.0.1:{port}: " in text
        assert "Fatal Python error" not in text
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
        await process.stdin.aclose()
        await process.stderr.aclose()
