"""SIGTERM and Ctrl-C end ``tidings chat --local < big.bin`` with 143 and 130 while it still
reads the file (README: "SIGTERM with 143, while it waits for a piped line too"). Before, a
file (and any stdin that is neither a pipe nor a terminal: ``< /dev/zero``) was read by
``stdin_lines`` in a worker thread, in ``sys.stdin``'s buffered reader: a long line's skip
(the README's ``tidings chat < big.bin``) held that reader's lock when the signal abandoned
the thread, and at interpreter exit CPython aborted ("Fatal Python error:
_enter_buffered_busy", SIGABRT, exit 134) instead of exiting 143 or 130. The file is now read
as a pipe is, a chunk at a time, by ``os.read`` in the worker thread: it holds no lock."""

from __future__ import annotations

import pathlib
import signal

import pytest

from ..file_stdin import LINUX_PROC, signal_while_reading

# As in a terminal: a suite started with SIGINT ignored would hand that on to the chat.
_CHAT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from tidings.supervisor.cli import main
sys.exit(main())
"""


@LINUX_PROC
@pytest.mark.parametrize(("signum", "code"), [
    pytest.param(signal.SIGTERM, 143, id="SIGTERM"),
    pytest.param(signal.SIGINT, 130, id="ctrl-c"),
])
async def test_a_signal_while_a_file_is_read_ends_the_chat_with_its_code(
        tmp_path: pathlib.Path, signum: int, code: int) -> None:
    returncode, said = await signal_while_reading(
        _CHAT, ["chat", "--local", "--workspace", str(tmp_path), "--db",
                str(tmp_path / "chat.db")], tmp_path, signum, past=0)
    assert returncode == code, said
    assert "Fatal Python error" not in said, said
    assert "Traceback" not in said, said
