"""``tidings prune ~/x.db``: a leading ``~`` is the home directory, as for ``tidings status
--db`` and ``serve.db`` (a path copied from the config file, or quoted in a script, named
"no database" before)."""

from __future__ import annotations

import os
import pathlib
import sqlite3
import time

import tidings
from tidings.supervisor import cli
from tidings.testing import MemoryRoute

DAY = 86_400.0


def _outbox_rows(db: pathlib.Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT count(*) FROM outbox").fetchone()[0]
    finally:
        conn.close()


async def test_a_leading_tilde_is_the_home_directory(tmp_path, monkeypatch, capsys) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(tmp_path)
    db = home / "t.db"
    clock = [time.time() - 40 * DAY]
    async with tidings.open_runtime(db, workspace=tmp_path, grace=0,
                                    clock=lambda: clock[0]) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute())
        async with rt.open_turn(session_id) as ctx:
            assert await (await ctx.output.send_text("old")).wait() == "delivered"

    assert cli.main(["status", "--db", "~/t.db", "--limit", "0"]) == 0
    assert "sent 1" in capsys.readouterr().out
    assert cli.main(["prune", "~/t.db", "--older-than", "30d"]) == 0
    assert capsys.readouterr().out.startswith("deleted: deliveries 1 ")
    assert _outbox_rows(db) == 0
    assert sorted(os.listdir(tmp_path)) == ["home"]  # nothing made under a folder named ~


def test_a_tilde_with_no_home_to_expand_is_one_line_and_exit_2(tmp_path, monkeypatch,
                                                                capsys) -> None:
    """``~nosuchuser/x.db``: pathlib raises a bare ``RuntimeError``, which ended both commands
    in a traceback."""
    monkeypatch.chdir(tmp_path)
    path = "~no_such_user_of_tidings/x.db"
    assert cli.main(["status", "--db", path]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tidings status: ")
    assert "no home directory" in err
    assert len(err.splitlines()) == 1
    assert cli.main(["prune", path, "--older-than", "1d"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tidings prune: ")
    assert "no home directory" in err
    assert len(err.splitlines()) == 1
    assert os.listdir(tmp_path) == []
