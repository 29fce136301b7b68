"""``tidings status`` counts the command answers owed on message id records (schema v8).

A session command answered with no session (``/clear`` with none, with
``dedupe_message_ids``, or on the gateway) whose answer did not go out owes it on its id's
record, for the platform's retry of the id. Nothing showed how many were owed: an operator
could not tell a platform that never retries from none owed. The overview says it (a count
of now, of the whole database: such an answer has no session); the pinned JSON shape stays.
"""

from __future__ import annotations

import json

import pytest

import tidings
from tidings.actors import Outbound
from tidings.channels import ChannelConfig
from tidings.supervisor.cli import main
from tidings.testing import MemoryChannel


class PlatformDown(Exception):
    pass


class Down(MemoryChannel):
    """Its platform call fails for every answer that has no session."""

    async def deliver(self, outbound: Outbound) -> None:
        if outbound.session_id is None:
            raise PlatformDown("the platform call failed")
        await super().deliver(outbound)


@pytest.fixture
async def db(tmp_path, workspace):
    path = tmp_path / "owed.db"
    async with tidings.open_runtime(path, workspace=workspace) as rt:
        channel = Down(rt, ChannelConfig("ops", dedupe_message_ids=True))
        for message_id in ("c1", "c2"):
            with pytest.raises(PlatformDown):
                await channel.say("/clear", chat_id="c1", sender_id="u1",
                                  message_id=message_id)
        session_id = await rt.create_session(channel="web")
    return path, session_id


async def test_the_overview_counts_the_answers_owed_on_id_records(db, capsys) -> None:
    path, session_id = db
    assert main(["status", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "owed: 2 command answer(s) not yet given" in out
    assert main(["status", "--db", str(path), "--session", session_id]) == 0
    assert "owed:" not in capsys.readouterr().out  # no session's: not of this one
    assert main(["status", "--db", str(path), "--json"]) == 0
    assert list(json.loads(capsys.readouterr().out)) == ["counts", "recent",
                                                           "sending_claimant"]


async def test_nothing_owed_prints_no_owed_line(tmp_path, workspace, capsys) -> None:
    path = tmp_path / "none.db"
    async with tidings.open_runtime(path, workspace=workspace) as rt:
        channel = MemoryChannel(rt, ChannelConfig("ops", dedupe_message_ids=True))
        await channel.say("/clear", chat_id="c1", sender_id="u1", message_id="c1")
    assert main(["status", "--db", str(path)]) == 0
    assert "owed:" not in capsys.readouterr().out


async def test_with_since_the_owed_line_says_it_counts_now(db, capsys) -> None:
    """A count of now, of the whole database: with ``--since`` (a time to come here, so
    nothing else is counted) the line says ``--since`` does not narrow it, as the ``held``
    line does; read plain, an operator took the answers for those owed since then."""
    path, _session_id = db
    assert main(["status", "--db", str(path), "--since", "4102444800"]) == 0
    out = capsys.readouterr().out
    assert "(total 0)" in out
    assert "owed now (--since does not apply): 2 command answer(s) not yet given" in out
