"""``tidings chat --url`` whose stdout cannot be written (``> /dev/full``: ENOSPC; ``| head -1``
once head left: EPIPE) ends at once with exit 1: one line on stderr (nothing for a reader that
left), never a traceback, never a reconnect."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest
import trio


@pytest.mark.parametrize("stdout", ["full", "closed"])
async def test_a_stdout_that_cannot_be_written_ends_the_chat_with_one_line(
        rt, serve_gateway, tmp_path: pathlib.Path, stdout: str) -> None:
    if stdout == "full":
        try:
            target = os.open("/dev/full", os.O_WRONLY)
        except FileNotFoundError:
            pytest.skip("no /dev/full")
    else:  # a pipe whose reader already left
        reader, target = os.pipe()
        os.close(reader)
    async with serve_gateway(rt) as (_gateway, url):
        try:
            with trio.fail_after(30):
                result = await trio.run_process(
                    [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--token",
                     "gateway-test-token", "--url", url, "--conversation", "stdout"],
                    stdin=b"hello\n", stdout=target, capture_stderr=True, cwd=tmp_path,
                    check=False)
        finally:
            os.close(target)
    stderr = result.stderr.decode()
    assert result.returncode == 1, stderr
    assert "Traceback" not in stderr
    assert "Exception ignored" not in stderr
    assert "reconnecting" not in stderr
    if stdout == "full":
        assert stderr.splitlines()[-1] == (
            "tidings chat: cannot write to stdout: [Errno 28] No space left on device"), stderr
