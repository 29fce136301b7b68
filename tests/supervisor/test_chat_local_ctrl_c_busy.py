"""Ctrl-C while ``tidings chat --local``'s agent is busy (its own code running) ends the chat
as a Ctrl-C at any other moment does (README, Quickstart: exit 130, its runtime closes, the
running turn is cancelled ``shutdown`` and that is committed). It was trio's
``KeyboardInterrupt``, raised wherever the signal landed: in the agent's code, it ended the
turn ``failed: KeyboardInterrupt`` (and on a terminal the prompt was put back after it), so
what the chat showed and recorded depended on what was running at that instant."""

from __future__ import annotations

import subprocess
import sys

import trio

from tidings.store import read_database

from ..pipes import collect_into
from .serve_process import environment

# As in a terminal: a suite started with SIGINT ignored would hand that on to the chat.
_CHAT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
from tidings.supervisor.cli import main
sys.exit(main())
"""


async def test_ctrl_c_while_the_agent_is_busy_cancels_its_turn_shutdown(tmp_path) -> None:
    with trio.fail_after(60):
        process = await trio.lowlevel.open_process(
            [sys.executable, "-c", _CHAT, "chat", "--local", "--db", str(tmp_path / "chat.db"),
             "--workspace", str(tmp_path), "--agent", "busy_ctrl_c_agent:BusyAgent"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            cwd=tmp_path, env=environment())
        try:
            assert process.stdin is not None
            await process.stdin.send_all(b"go\n")  # (stdin stays open: not its end)
            out, err = bytearray(), bytearray()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(collect_into, process.stdout, out)
                nursery.start_soon(collect_into, process.stderr, err)
                exit_code = await process.wait()
        finally:
            process.kill()
            await process.wait()
            await process.stdin.aclose()
    assert exit_code == 130, err
    assert b"Traceback" not in err, err
    assert b"[cancelled: shutdown]" in out, out
    assert b"KeyboardInterrupt" not in out, out
    turns = await trio.to_thread.run_sync(
        read_database, tmp_path / "chat.db",
        lambda conn: conn.execute("SELECT status, reason FROM turns").fetchall())
    assert turns == [("cancelled", "shutdown")], turns
