"""``tidings status`` prints stored text (a delivery's text, a route's error, ids) without the
control characters a terminal acts on: they are shown escaped."""

from __future__ import annotations

import re

import pytest
import trio

import tidings
from tidings.supervisor.cli import main
from tidings.testing import MemoryRoute

_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")  # every C0/C1 control but the newline


@pytest.fixture
async def db(tmp_path):
    # An agent's reply echoing what a user typed, a platform's error body, a chosen session
    # id: each may hold escape sequences (clear the screen, set the title, write the
    # clipboard), which the text view wrote to the operator's terminal as they were.
    path = tmp_path / "tidings.db"
    async with tidings.open_runtime(path, workspace=tmp_path) as rt:
        session_id = await rt.create_session(channel="web", session_id="s\x1b[31mred")
        rt.router.bind(session_id, MemoryRoute(
            fail=ValueError("platform said \x1b]0;pwned\x07 no\x9b")))
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("hi \x1b[2J\x9b31m there")
        with trio.fail_after(10):
            assert await handle.wait() == "failed"
    return path, handle.delivery_id


@pytest.mark.parametrize("one", [False, True])
async def test_control_characters_in_stored_text_are_printed_escaped(db, capsys, one) -> None:
    path, delivery_id = db
    code = main(["status", "--db", str(path), *([delivery_id] if one else [])])
    out, _ = capsys.readouterr()
    assert code == 0
    assert _CONTROL.findall(out) == []
    assert r"platform said \x1b]0;pwned\x07 no\x9b" in out
    assert r"s\x1b[31mred" in out
    if one:
        assert r"hi \x1b[2J\x9b31m there" in out


async def test_the_session_asked_for_is_printed_escaped_in_the_header(db, capsys) -> None:
    # The header said "session <the id given>" as it was, escape sequences and all: the
    # same chosen id, copied from a listing into --session, drove the terminal there.
    path, _ = db
    code = main(["status", "--db", str(path), "--session", "s\x1b[31mred"])
    out, _ = capsys.readouterr()
    assert code == 0
    assert _CONTROL.findall(out) == []
    assert out.splitlines()[0] == rf"database {path}, session s\x1b[31mred"
