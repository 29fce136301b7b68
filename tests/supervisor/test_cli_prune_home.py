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
