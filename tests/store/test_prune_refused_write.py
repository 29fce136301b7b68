"""``tidings prune`` on a database whose writes the system refuses (a full disk, where a prune
is most wanted and still needs room for SQLite's log): one line naming the file, exit 2,
nothing deleted, or, refused midway, saying what the chunks before it deleted (README,
Retention: the exit codes)."""

from __future__ import annotations

import pathlib
import sqlite3
import time

import tidings
from tidings.store import _prune
from tidings.supervisor import cli
from tidings.testing import MemoryRoute

DAY = 86_400.0


async def _old_database(tmp_path: pathlib.Path) -> pathlib.Path:
    db = tmp_path / "tidings.db"
    clock = [time.time() - 40 * DAY]
    async with tidings.open_runtime(db, workspace=tmp_path, clock=lambda: clock[0]) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute())
        async with rt.open_turn(session_id) as ctx:
            for i in range(3):
                assert await (await ctx.output.send_text(f"old {i}")).wait() == "delivered"
    return db


def _outbox_rows(db: pathlib.Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM outbox").fetchone()[0]
    finally:
        conn.close()


def _refused_prune(db: pathlib.Path, capsys) -> str:  # type: ignore[no-untyped-def]
    """Run ``tidings prune`` on *db*, which must be refused: exit 2, nothing on stdout, one
    line on stderr, returned."""
    capsys.readouterr()
    code = cli.main(["prune", str(db), "--older-than", "30d"])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert len(err.splitlines()) == 1
    return err


async def test_a_prune_whose_writes_are_refused_says_so_in_one_line_and_exits_2(
        tmp_path, capsys, monkeypatch) -> None:
    db = await _old_database(tmp_path)
    real = _prune.connect_writer

    def refusing(path):  # every write of the prune's connection is refused, as SQLITE_FULL
        conn = real(path)
        conn.execute("PRAGMA query_only = 1")
        return conn

    monkeypatch.setattr(_prune, "connect_writer", refusing)
    err = _refused_prune(db, capsys)
    assert err.startswith(f"tidings prune: cannot prune {db}: ")
    assert _outbox_rows(db) == 3


async def test_a_write_refused_after_some_chunks_says_what_went_before_it(
        tmp_path, capsys, monkeypatch) -> None:
    """The disk fills while the prune goes, chunk after chunk: the chunks committed before
    stay deleted (README), but the one line said only the refusal, so the operator could not
    tell that anything went, or how much. The line says what went before it."""
    db = await _old_database(tmp_path)
    monkeypatch.setattr(_prune, "DELIVERIES_PER_STEP", 1)
    real, steps = _prune.prune_step, []

    def full_at_the_second_chunk(conn, cutoff, sweep_from=None):
        steps.append(cutoff)
        if len(steps) == 2:
            raise sqlite3.OperationalError("database or disk is full")
        return real(conn, cutoff, sweep_from)

    monkeypatch.setattr(_prune, "prune_step", full_at_the_second_chunk)
    err = _refused_prune(db, capsys)
    assert err.startswith(f"tidings prune: cannot prune {db}: database or disk is full")
    assert "; deleted before it: deliveries 1  work_items 1  events " in err
    assert _outbox_rows(db) == 2
