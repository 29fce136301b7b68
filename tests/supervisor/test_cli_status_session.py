"""``tidings status --session ID`` for an id no session has: it printed zero counts and "no
deliveries to show", so a mistyped id looked like an idle session. It says there is no such
session (one line on stderr, nothing on stdout, exit 1: as ``tidings status DELIVERY_ID`` for
an id no delivery has), with ``--json`` too; a session with no deliveries is still shown."""

from __future__ import annotations

import json

import pytest

import tidings
from tidings.supervisor.cli import main


@pytest.fixture
async def db(tmp_path, workspace) -> dict:
    path = tmp_path / "tidings.db"
    async with tidings.open_runtime(path, workspace=workspace) as rt:
        idle = await rt.create_session(channel="web")
    return {"path": path, "idle": idle}


@pytest.mark.parametrize("flags", [[], ["--json"], ["--limit", "0"]])
async def test_a_session_no_one_has_is_said_so_and_exits_1(db, capsys, flags) -> None:
    code = main(["status", "--db", str(db["path"]), "--session", db["idle"] + "x", *flags])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert err == f"tidings status: no session {db['idle'] + 'x'!r} in {db['path']}\n"


async def test_a_session_with_no_deliveries_is_shown_with_zero_counts(db, capsys) -> None:
    assert main(["status", "--db", str(db["path"]), "--session", db["idle"]]) == 0
    out = capsys.readouterr().out
    assert f"session {db['idle']}" in out
    assert "(total 0)" in out
    assert main(["status", "--db", str(db["path"]), "--session", db["idle"], "--json"]) == 0
    assert sum(json.loads(capsys.readouterr().out)["counts"].values()) == 0
