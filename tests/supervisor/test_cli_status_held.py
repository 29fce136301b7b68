"""The ``held:`` line of ``tidings status`` is a count of now: ``--since`` narrows the counts
and rows (the header says "updated since ..."), not the held messages, which have no update
time. Under that header the line read as held since then; with ``--since`` it says so."""

from __future__ import annotations

import pytest

import tidings
from tidings.supervisor.cli import main


@pytest.fixture
async def db(tmp_path, workspace):
    path = tmp_path / "held.db"
    async with tidings.open_runtime(path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        await rt.hold_inbound(session_id, notice="not answered")
    return path


async def test_with_since_the_held_line_says_it_counts_now(db, capsys) -> None:
    # a time to come: nothing was updated since, and the message is held all the same
    assert main(["status", "--db", str(db), "--since", "4102444800"]) == 0
    out = capsys.readouterr().out
    assert "(total 0)" in out
    assert "held now (--since does not apply): 1 accepted message(s) not yet answered" in out


async def test_without_since_the_held_line_is_as_it_was(db, capsys) -> None:
    assert main(["status", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "held: 1 accepted message(s) not yet answered" in out
