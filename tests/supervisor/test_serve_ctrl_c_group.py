"""Ctrl-C in the terminal of ``tidings serve --writer process``: the terminal sends SIGINT to
the whole foreground process group, the writer process too; a closed terminal (a lost ssh
session) sends SIGHUP the same way. The stop is still the graceful one: the writer process,
whose lifetime is its host's, ignores the signal and commits the stop (it had died of a
KeyboardInterrupt, its traceback in the log, and been restarted mid-stop with a batch in flight
that "may or may not have committed"; SIGHUP killed the server outright). Under ``nohup``
(SIGHUP ignored) the server keeps running: watching the signal would undo that."""

from __future__ import annotations

import os
import signal

import pytest
import trio

from tidings.channels import GatewayClient
from tidings.store import read_database

from .serve_process import serve_process

TIMEOUT = 60


def _turns(conn) -> list[tuple[str, str | None]]:
    return conn.execute("SELECT status, reason FROM turns").fetchall()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGHUP], ids=["ctrl-c", "hangup"])
async def test_a_signal_to_the_process_group_stops_gracefully_with_its_writer(
        tmp_path, signum) -> None:
    db = tmp_path / "group.db"
    async with serve_process(db, "--writer", "process", "--agent", "serve_agents:GatedAgent",
                             "--grace", "0", own_group=True) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="a") as client:
        await client.message("hold:forever")
        with trio.fail_after(TIMEOUT):
            await client.receive_until(lambda frame: frame.get("event") == "text_chunk")
        os.killpg(server.process.pid, signum)  # the terminal's Ctrl-C, or its hangup
        with trio.fail_after(TIMEOUT):
            assert await server.process.wait() == 0
    log = "\n".join(server.lines)
    assert f"event=stop_requested signal={signum.name} mode=graceful" in log, log
    assert "event=grace_expired grace=0 turns_cancelled=1" in log, log  # the held turn
    assert "Traceback" not in log, log
    assert "KeyboardInterrupt" not in log, log
    assert "child=writer" not in log, log  # never crashed, never restarted
    assert "event=stopped" in log
    # The stop cancelled the running turn and its writer committed that.
    turns = await trio.to_thread.run_sync(read_database, db, _turns)
    assert turns == [("cancelled", "shutdown")], turns


async def test_under_nohup_a_hangup_leaves_it_running(tmp_path) -> None:
    db = tmp_path / "nohup.db"
    async with serve_process(db, "--writer", "process", ignore=(signal.SIGHUP,),
                             own_group=True) as server:
        os.killpg(server.process.pid, signal.SIGHUP)  # ignored by the server and its writer
        async with GatewayClient.connect(server.url, token=server.token,
                                         conversation="b") as client:
            await client.message("still here?")
            with trio.fail_after(TIMEOUT):
                *_, reply = await client.receive_until(
                    lambda frame: frame["type"] == "delivery")
        server.signal(signal.SIGTERM)
        with trio.fail_after(TIMEOUT):
            assert await server.process.wait() == 0
    assert "still here?" in reply["text"]  # the built-in echo agent answered, after the hangup
    log = "\n".join(server.lines)
    assert "signal=SIGHUP" not in log, log
    assert "event=stop_requested signal=SIGTERM mode=graceful" in log, log
    assert "child=writer" not in log, log
