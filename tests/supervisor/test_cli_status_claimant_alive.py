"""``tidings status`` named the process that claimed ``sending`` rows (pid, host) but showed
them as if it still sent them, dead or not: after a crash they read ``sending`` until the next
start makes them ``unknown``, and the operator had to check the pid by hand. When the process
registered on this host the views now say whether it runs (``os.kill(pid, 0)``; on Linux its
start time rules out a pid another process took since), and that the rows of one that does not
become ``unknown`` at the next start; of another host, that this one cannot tell. ``--json``
gives the process with ``running``: true, false, or null when it cannot tell."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import sqlite3
import subprocess
import sys

import pytest

import tidings
from tidings.supervisor.cli import main
from tidings.testing import MemoryRoute


@pytest.fixture
async def db(tmp_path, workspace) -> dict:
    """A database whose last process (this one) stopped with a row in flight: it stays
    ``sending``, claimed by this pid, which runs."""
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


def _recorded(path: pathlib.Path, **columns: object) -> None:
    """Change what the latest process registered, as another process would have written it."""
    conn = sqlite3.connect(path)
    try:
        sets = ", ".join(f"{column} = ?" for column in columns)
        with conn:
            conn.execute(f"UPDATE process_epochs SET {sets} "
                         "WHERE epoch = (SELECT MAX(epoch) FROM process_epochs)",
                         tuple(columns.values()))
    finally:
        conn.close()


def _dead_pid() -> int:
    """The pid of a process that ran and was reaped: no process has it (until reused)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _status(db: dict, *extra: str, capsys) -> tuple[str, str]:
    assert main(["status", "--db", str(db["path"]), *extra]) == 0
    out = capsys.readouterr().out
    overview = next(line for line in out.splitlines() if line.startswith("sending: "))
    assert main(["status", "--db", str(db["path"]), db["sending"]]) == 0
    one = capsys.readouterr().out
    claimant = next(line for line in one.splitlines() if line.startswith("claimant "))
    return overview, claimant


def _json(db: dict, capsys) -> tuple[dict, dict]:
    assert main(["status", "--db", str(db["path"]), "--json"]) == 0
    overview = json.loads(capsys.readouterr().out)
    assert main(["status", "--db", str(db["path"]), db["sending"], "--json"]) == 0
    return overview["sending_claimant"], json.loads(capsys.readouterr().out)["claimed_by"]


async def test_a_claimant_that_runs_is_said_to(db, capsys) -> None:
    overview, claimant = _status(db, capsys=capsys)
    assert overview.endswith("), which is running")
    assert claimant.endswith(", running")
    process, claimed_by = _json(db, capsys)
    assert process == claimed_by
    assert process["pid"] == os.getpid()
    assert process["hostname"] == socket.gethostname()
    assert process["running"] is True


async def test_a_dead_claimant_is_said_gone_and_its_rows_unknown_at_the_next_start(
        db, capsys) -> None:
    pid = _dead_pid()
    _recorded(db["path"], pid=pid)
    overview, claimant = _status(db, capsys=capsys)
    assert overview.startswith(f"sending: claimed by pid {pid} on {socket.gethostname()} ")
    assert overview.endswith("), which no longer runs: they become unknown at the next start")
    assert claimant.endswith(", no longer running: unknown at the next start")
    process, claimed_by = _json(db, capsys)
    assert process == claimed_by
    assert (process["pid"], process["running"]) == (pid, False)


async def test_a_claimant_of_another_host_cannot_be_told(db, capsys) -> None:
    _recorded(db["path"], hostname="elsewhere.invalid")
    overview, claimant = _status(db, capsys=capsys)
    assert overview.endswith("), on another host: whether it runs cannot be told from here; "
                             "if it no longer does, they become unknown at the next start")
    assert claimant.endswith(", on another host: cannot tell whether it runs")
    process, claimed_by = _json(db, capsys)
    assert process == claimed_by
    assert (process["hostname"], process["running"]) == ("elsewhere.invalid", None)


@pytest.mark.parametrize("pid", [0, -1])
async def test_a_pid_no_process_can_have_is_not_signalled(db, capsys, pid) -> None:
    """0 and -1 name process groups for ``kill``: asked about, they would read as running."""
    _recorded(db["path"], pid=pid)
    overview, claimant = _status(db, capsys=capsys)
    assert overview.endswith("), which cannot be told running or not; if it no longer runs, "
                             "they become unknown at the next start")
    assert claimant.endswith(", cannot tell whether it runs")
    process, _ = _json(db, capsys)
    assert process["running"] is None


@pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists(), reason="needs /proc")
async def test_a_pid_held_by_a_process_started_later_is_not_the_claimant(db, capsys) -> None:
    """The pid (this process's) runs, but this process started after the claimant
    registered (in 1970, as recorded): the claimant's pid was reused."""
    _recorded(db["path"], started_at=1_000_000.0)
    overview, claimant = _status(db, capsys=capsys)
    assert f"), which no longer runs (pid {os.getpid()} is a process started " in overview
    assert overview.endswith("): they become unknown at the next start")
    assert f", no longer running (pid {os.getpid()} is a process started " in claimant
    assert claimant.endswith("): unknown at the next start")
    process, _ = _json(db, capsys)
    assert process["running"] is False


async def test_a_row_no_longer_sending_has_no_next_start_note(tmp_path, workspace,
                                                             capsys) -> None:
    path = tmp_path / "sent.db"
    route = MemoryRoute()
    async with tidings.open_runtime(path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("delivered")
        await handle.wait()
    _recorded(path, pid=_dead_pid())
    assert main(["status", "--db", str(path), handle.delivery_id]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "status       sent" in lines  # (the premise)
    claimant = next(line for line in lines if line.startswith("claimant "))
    assert claimant.endswith(", no longer running")


def _status_of_an_unreaped_claimant(db: dict, capsys) -> tuple[str, str]:
    """The views with the claimant a child that exited and that this process (its parent)
    has not waited for yet: a zombie, which still holds its pid."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)  # exited, left unreaped
        _recorded(db["path"], pid=child.pid)
        return _status(db, capsys=capsys)
    finally:
        child.wait()


@pytest.mark.skipif(not pathlib.Path("/proc/self/stat").exists() or not hasattr(os, "waitid"),
                    reason="needs /proc and waitid")
async def test_a_claimant_that_exited_but_was_not_reaped_is_gone(db, capsys) -> None:
    """``kill`` finds a zombie's pid, but it runs no more."""
    overview, claimant = _status_of_an_unreaped_claimant(db, capsys)
    assert overview.endswith("), which no longer runs: they become unknown at the next start")
    assert claimant.endswith(", no longer running: unknown at the next start")
