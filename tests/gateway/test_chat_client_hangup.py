"""SIGHUP (its terminal window closed, an ssh session lost) ends ``tidings chat --url`` as
SIGTERM does (``test_chat_client_sigterm.py``), and as it ends ``chat --local``
(``tests/supervisor/test_chat_local_hangup.py``): a cancel, exit 129 (128 + SIGHUP). Before,
it killed the websocket chat by its default action (no close frame, a terminal left in
readline's modes). Under ``nohup`` (SIGHUP ignored) the chat keeps running: watching the
signal would undo that."""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest
import trio

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="a platform with SIGHUP")

# As in a terminal: a suite started with SIGHUP ignored would hand that on to the chat; or,
# as `nohup` starts it, SIGHUP ignored.
_CHAT = """
import signal, sys
signal.signal(signal.SIGTERM, signal.SIG_DFL)
signal.signal(signal.SIGHUP, signal.{disposition})
from tidings.supervisor.cli import main
sys.exit(main())
"""


async def _hung_up(serve_gateway, rt, tmp_path, disposition: str, conversation: str,
                   ) -> tuple[int, bytes]:
    """Send SIGHUP to a piped ``chat --url`` once it waits for a line (and SIGTERM after it,
    with SIGHUP ignored, as it would run on): its exit code (129: the hangup ended it; 143:
    the SIGTERM did) and its stderr."""
    async with serve_gateway(rt) as (_gateway, url):
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _CHAT.format(disposition=disposition), "chat", "--token",
             "gateway-test-token", "--url", url, "--conversation", conversation],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            cwd=tmp_path)
        try:
            with trio.fail_after(60):
                assert process.stderr is not None
                said = b""
                while b"/help for commands" not in said:  # connected, waiting for a line
                    said += await process.stderr.receive_some()
                process.send_signal(signal.SIGHUP)
                if disposition == "SIG_IGN":  # ignored: discarded as it is sent
                    process.send_signal(signal.SIGTERM)
                code = await process.wait()
                said += b"".join([chunk async for chunk in process.stderr])
        finally:
            process.kill()
            assert process.stdin is not None
            await process.stdin.aclose()
            await process.wait()
    return code, said


async def test_a_hangup_ends_a_piped_chat_with_129(rt, serve_gateway, tmp_path) -> None:
    code, said = await _hung_up(serve_gateway, rt, tmp_path, "SIG_DFL", "hangup")
    assert code == 129, said
    assert b"Traceback" not in said, said


async def test_under_nohup_a_hangup_leaves_the_chat_running(rt, serve_gateway,
                                                            tmp_path) -> None:
    code, said = await _hung_up(serve_gateway, rt, tmp_path, "SIG_IGN", "hangup-nohup")
    assert code == 143, said  # SIGTERM's: the hangup did not end it
