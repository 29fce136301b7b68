"""SIGHUP (a closed terminal, a lost ssh session) stops ``tidings serve`` as SIGTERM does,
gracefully, writer process included; left to its default it killed the server outright, with
no grace for running turns (their rows left for the next start to call them dead). Under
``nohup`` (SIGHUP ignored) the server keeps running: watching the signal would undo that."""

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


async def test_a_hangup_stops_gracefully_with_its_writer(tmp_path) -> None:
    db = tmp_path / "hangup.db"
    async with serve_process(db, "--writer", "process", "--agent", "serve_agents:GatedAgent",
                             "--grace", "0", own_group=True) as server, \
            GatewayClient.connect(server.url, token=server.token, conversation="a") as client:
        await client.message("hold:forever")
        with trio.fail_after(TIMEOUT):
            await client.receive_until(lambda frame: frame.get("event") == "text_chunk")
        os.killpg(server.process.pid, signal.SIGHUP)  # the terminal's hangup, to its group
        with trio.fail_after(TIMEOUT):
            assert await server.process.wait() == 0
    log = "\n".join(server.lines)
    assert "event=stop_requested signal=SIGHUP mode=graceful" in log, log
    assert "event=grace_expired grace=0 turns_cancelled=1" in log, log  # the held turn
    assert "Traceback" not in log, log
    assert "child=writer" not in log, log  # the writer process never died, never restarted
    assert "event=stopped" in log
    turns = await trio.to_thread.run_sync(read_database, db, _turns)
    assert turns == [("cancelled", "shutdown")], turns  # recorded by the graceful stop


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
