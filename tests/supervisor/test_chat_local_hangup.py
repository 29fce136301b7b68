"""SIGHUP (its terminal window closed, an ssh session lost) ends ``tidings chat --local`` as
SIGTERM does, as ``tidings serve`` stops on it (``test_serve_ctrl_c_group.py``): the chat is
cancelled, its runtime closes (a running turn gets its grace, then is cancelled with reason
``shutdown``) and its writer commits that; exit 129 (128 + SIGHUP). Before, SIGHUP killed the
chat by its default action: the turn stayed ``running`` in the database, left to the next
start's recovery. Under ``nohup`` (SIGHUP ignored) the chat keeps running: watching the signal
would undo that."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys

import pytest
import trio

from tidings.store import read_database

from ..pipes import read_to_end
from .serve_process import environment

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="a platform with SIGHUP")

TIMEOUT = 60

# As in a terminal: a suite started with SIGHUP ignored would hand that on to the chat; or,
# as `nohup` starts it, SIGHUP ignored.
_CHAT = """
import signal, sys
signal.signal(signal.SIGHUP, signal.{disposition})
from tidings.supervisor.cli import main
sys.exit(main())
"""


def _turns(conn) -> list[tuple[str, str | None]]:
    return conn.execute("SELECT status, reason FROM turns").fetchall()


async def _chat_holding_a_turn(tmp_path: pathlib.Path, disposition: str,
                               ) -> tuple[trio.Process, trio.abc.SendStream, list[bytes]]:
    """A piped ``chat --local`` (in a session of its own, as a terminal's) whose turn waits
    until a ``release:`` line; returned once the turn is running, its stdin left open."""
    process = await trio.lowlevel.open_process(
        [sys.executable, "-c", _CHAT.format(disposition=disposition), "chat", "--local",
         "--db", str(tmp_path / "chat.db"), "--workspace", str(tmp_path), "--chunks",
         "--agent", "serve_agents:GatedAgent"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path,
        env=environment(), start_new_session=True)
    assert process.stdin is not None
    assert process.stdout is not None
    screen = [b""]
    await process.stdin.send_all(b"hold:forever\n")
    while b'[chunk "holding forever"]' not in screen[0]:
        chunk = await process.stdout.receive_some()
        assert chunk, screen[0]
        screen[0] += chunk
    return process, process.stdin, screen


@pytest.mark.parametrize(("disposition", "code"), [("SIG_DFL", 129), ("SIG_IGN", 143)],
                         ids=["hangup", "nohup"])
async def test_a_hangup_stops_the_chat_and_its_runtime_commits_the_cancel(
        tmp_path, disposition, code) -> None:
    """Under ``nohup`` the hangup is discarded as it is sent: the SIGTERM after it ends the
    chat (143), where a hangup taken would have ended it first (129)."""
    with trio.fail_after(TIMEOUT):
        process, stdin, screen = await _chat_holding_a_turn(tmp_path, disposition)
        try:
            os.killpg(process.pid, signal.SIGHUP)  # the terminal's hangup, to its session
            if disposition == "SIG_IGN":
                process.send_signal(signal.SIGTERM)
            exit_code = await process.wait()
            out = screen[0] + await read_to_end(process.stdout)
            err = await read_to_end(process.stderr)
        finally:
            process.kill()
            await process.wait()
            await stdin.aclose()
    assert exit_code == code, err
    assert b"Traceback" not in err, err
    assert b"[cancelled: shutdown]" in out, out
    # The stop cancelled the running turn, and the runtime's writer committed that.
    turns = await trio.to_thread.run_sync(read_database, tmp_path / "chat.db", _turns)
    assert turns == [("cancelled", "shutdown")], turns
