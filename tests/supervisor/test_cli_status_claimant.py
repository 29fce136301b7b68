"""After a crash, ``tidings status`` shows the dead process's ``sending`` rows as ``sending``
until the next start (the latest process is taken to be alive: its runtime lock cannot be
probed safely from a read). The operator was left with a claim ``epoch:N`` and no way to tell
which process it names: the text views now say its pid and host (from ``process_epochs``), so
whether it still runs can be checked (test_cli_status_claimant_alive.py: and whether it does).
The JSON shapes keep their keys and add the process."""

from __future__ import annotations

import json
import os
import socket

import pytest

import tidings
from tidings.supervisor.cli import main
from tidings.testing import MemoryRoute


@pytest.fixture
async def db(tmp_path, workspace) -> dict:
    """A database whose last process stopped with a row in flight: it stays ``sending``."""
    path = tmp_path / "tidings.db"
    stuck = MemoryRoute()
    stuck.stall()
    async with tidings.open_runtime(path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, stuck)
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("in flight")
            await stuck.wait_attempted(1)
    return {"path": path, "sending": handle.delivery_id}


def _who() -> str:
    return f"pid {os.getpid()} on {socket.gethostname()}"


async def test_one_delivery_names_the_process_that_claimed_it(db, capsys) -> None:
    assert main(["status", "--db", str(db["path"]), db["sending"]]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].startswith("status       sending")  # (the premise: still sending)
    claimant = next(line for line in lines if line.startswith("claimant "))
    assert claimant.startswith("claimant     epoch:")
    assert f": {_who()}, started " in claimant


async def test_the_overview_names_the_process_its_sending_rows_wait_on(db, capsys) -> None:
    assert main(["status", "--db", str(db["path"])]) == 0
    out = capsys.readouterr().out
    assert "sending 1" in out
    assert f"sending: claimed by {_who()} (started " in out


async def test_the_json_shapes_keep_their_keys_and_add_the_process(db, capsys) -> None:
    """(test_cli_status_claimant_alive.py checks the process's fields.)"""
    assert main(["status", "--db", str(db["path"]), "--json"]) == 0
    assert list(json.loads(capsys.readouterr().out)) == ["counts", "recent", "sending_claimant"]
    assert main(["status", "--db", str(db["path"]), db["sending"], "--json"]) == 0
    one = json.loads(capsys.readouterr().out)
    assert one["claimant"].startswith("epoch:")
    assert list(one)[-2:] == ["events", "claimed_by"]
    assert not any(isinstance(value, str) and _who() in value for value in one.values())


async def test_with_no_row_sending_the_overview_names_no_process(tmp_path, workspace,
                                                                capsys) -> None:
    path = tmp_path / "idle.db"
    async with tidings.open_runtime(path, workspace=workspace):
        pass
    assert main(["status", "--db", str(path)]) == 0
    assert "claimed by" not in capsys.readouterr().out
