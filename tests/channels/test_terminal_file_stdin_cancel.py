"""A host that reads ``stdin_lines`` itself, with a file on stdin, can cancel the read and
exit. Before, a file was read in a worker thread through ``sys.stdin``'s buffered reader: a
cancel while a long line was skipped abandoned that thread holding the reader's lock, and
CPython aborted at exit ("Fatal Python error: _enter_buffered_busy", SIGABRT) instead of
exiting as the host said. 15b38b4 fixed it for ``tidings chat``'s own reading
(``supervisor/_chat_input.py``); the public helper reads by ``os.read`` now too."""

from __future__ import annotations

import pathlib
import signal

from ..file_stdin import LINUX_PROC, signal_while_reading

_HOST = """
import signal, sys
import trio
from tidings.channels._terminal import stdin_lines

async def main():
    with trio.open_signal_receiver(signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            async def read():
                async for _line in stdin_lines():
                    pass
            nursery.start_soon(read)
            async for _signum in signals:
                nursery.cancel_scope.cancel()
                break

trio.run(main)
sys.exit(7)
"""


@LINUX_PROC
async def test_a_host_cancels_a_file_read_by_stdin_lines_and_exits(
        tmp_path: pathlib.Path) -> None:
    # past the line limit: in the skip
    code, said = await signal_while_reading(_HOST, [], tmp_path, signal.SIGTERM, past=1 << 22)
    assert code == 7, said
    assert "Fatal Python error" not in said, said
    assert "Traceback" not in said, said
