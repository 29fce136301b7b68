"""A session an earlier version stored with an id over ``MAX_ID_CHARS`` stays usable.

Before ``MAX_ID_CHARS`` (1024) was checked, ``create_session(session_id=...)`` took a chosen id
of any length. Such a session is in the database: every call that looks a session up (a turn,
a notice, a hold, its history, the status filter, a child, a route's binding) must still find
it, where they refused its id as if no session could have it. Only a new id is capped (a chosen
``session_id``, a ``turn_id``, a ``message_id``...); an unknown long id is not found.
"""

from __future__ import annotations

import json

import pytest

from tidings.errors import SessionNotFoundError
from tidings.store import create_session
from tidings.supervisor.cli import main
from tidings.testing import MemoryRoute

from .conftest import rows

OLD = "o" * 1500  # over MAX_ID_CHARS: what an earlier version stored as given


async def _stored_by_an_earlier_version(rt) -> str:
    """The session row as an earlier version wrote it (its checks took the id)."""
    await rt.store.commit(create_session(OLD, core_id=rt.core_id, channel="web",
                                         now=rt.store.clock()))
    return OLD


async def test_a_stored_long_session_id_still_runs_turns_notices_and_holds(rt, db_path) -> None:
    sid = await _stored_by_an_earlier_version(rt)
    assert (await rt.session(sid)).session_id == sid
    held = await rt.hold_inbound(sid, notice="not answered", message_id="m1")
    assert not await rt.session_has_turns(sid)
    async with rt.open_turn(sid, message_id="m1", inbound_ids=[held]) as ctx:
        await rt.record_user_message(sid, "hello", turn_id=ctx.turn_id)
        await ctx.output.send_text("hi there")
    assert await rt.session_has_turns(sid)
    await rt.notify(sid, "a notice")
    assert [m.text for m in await rt.history(sid)] == ["hello", "hi there"]
    assert sum((await rt.status_counts(session_id=sid)).values()) == 2
    assert len(await rt.recent_deliveries(session_id=sid)) == 2
    child = await rt.create_session("web", parent_session_id=sid)
    assert (await rt.session(child)).parent_session_id == sid
    token = rt.router.bind(sid, MemoryRoute())
    rt.router.unbind(token)
    await rt.unrouted_written(sid)
    assert await rt.abandon_unacked(sid) == []
    assert rows(db_path, "SELECT count(*) FROM inbound_messages") == [(0,)]


async def test_an_unknown_long_session_id_is_not_found(rt) -> None:
    with pytest.raises(SessionNotFoundError):
        await rt.session(OLD)
    with pytest.raises(SessionNotFoundError):
        await rt.notify(OLD, "a notice")


async def test_tidings_status_filters_on_a_stored_long_session_id(rt, db_path,
                                                                  capsys) -> None:
    sid = await _stored_by_an_earlier_version(rt)
    await rt.notify(sid, "a notice")
    code = main(["status", "--db", str(db_path), "--session", sid, "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    [row] = json.loads(captured.out)["recent"]
    assert row["session_id"] == sid


@pytest.mark.parametrize("sid", [OLD, "a/b", ".."], ids=["long", "slash", "dotdot"])
async def test_deliveries_filters_on_a_session_an_earlier_version_stored(rt, sid) -> None:
    """``rt.deliveries(session_id)`` checked the filter as a new session's name, refusing the
    ids earlier versions stored (``a/b``, ``..``: sessions that still exist)."""
    await rt.store.commit(create_session(sid, core_id=rt.core_id, channel="web",
                                         now=rt.store.clock()))
    handle = await rt.notify(sid, "a notice")
    assert [d.delivery_id for d in await rt.deliveries(sid)] == [handle.delivery_id]
