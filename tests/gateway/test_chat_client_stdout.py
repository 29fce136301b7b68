"""``tidings chat --url`` whose stdout cannot be written (``> /dev/full``: ENOSPC; ``| head -1``
once head left: EPIPE) ends at once with exit 1: one line on stderr (nothing for a reader that
left), never a traceback, never a reconnect."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest
import trio

from ..unwritable_stdout import KINDS, assert_one_line_ending, open_unwritable


@pytest.mark.parametrize("stdout", KINDS)
async def test_a_stdout_that_cannot_be_written_ends_the_chat_with_one_line(
        rt, serve_gateway, tmp_path: pathlib.Path, stdout: str) -> None:
    target = open_unwritable(stdout)
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
    assert_one_line_ending(stdout, result.returncode, result.stderr.decode())
