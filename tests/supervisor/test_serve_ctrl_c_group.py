"""Ctrl-C in the terminal of ``tidings serve --writer process``: the terminal sends SIGINT to
the whole foreground process group, the writer process too. The stop is still the graceful
one: the writer process, whose lifetime is its host's, ignores the signal and commits the stop
(it had died of a KeyboardInterrupt, its traceback in the log, and been restarted mid-stop with
a batch in flight that "may or may not have committed")."""

from __future__ import annotations

import os
import signal

import trio

from tidings.channels import GatewayClient
from tidings.store import read_database

from .serve_process import serve_process

TIMEOUT = 60


def _turns(conn) -> list[tuple[str, str | None]]:
    return conn.execute("SELECT status, reason FROM turns").fetchall()


async def test_ctrl_c_to_the_process_group_stops_gracefully_with_its_writer(tmp_path) -> None:
    db = tmp_path / "group.db"
    async with serve_process(db, "--writer", "process", "--agent", "serve_agents:GatedAgent",
                             "--grace", "0", own_group=True) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="a") as client:
        await client.message("hold:forever")
        with trio.fail_after(TIMEOUT):
            await client.receive_until(lambda frame: frame.get("event") == "text_chunk")
        os.killpg(server.process.pid, signal.SIGINT)  # the terminal's Ctrl-C
        with trio.fail_after(TIMEOUT):
            assert await server.process.wait() == 0
    log = "\n".join(server.lines)
    assert "Traceback" not in log, log
    assert "KeyboardInterrupt" not in log, log
    assert "child=writer" not in log, log  # never crashed, never restarted
    assert "event=stopped" in log
    # The stop cancelled the running turn and its writer committed that.
    turns = await trio.to_thread.run_sync(read_database, db, _turns)
    assert turns == [("cancelled", "shutdown")], turns
