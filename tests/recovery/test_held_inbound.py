"""Accepted messages held until they are dealt with (``rt.hold_inbound``).

A channel holds each message it accepts; the end of the turn that answers it, the notice that
tells about it, or ``release_inbound`` releases it (in the same commit). What a process still
held when it stopped (a crash, or a stop that cut its turn) is told at the next recovery: one
"not answered" notice in its session, once. Leaving a runtime with holds open is, for the
next open, exactly what a crash leaves: the holds of an earlier process epoch.
"""

from __future__ import annotations

import contextlib
import sqlite3

import pytest
import trio

import tidings
from tidings.errors import ValidationError
from tidings.store import SCHEMA_VERSION
from tidings.store._schema import MIGRATIONS
from tidings.testing import MemoryRoute

from .conftest import held_count


async def _recover(db_path, workspace, session_id: str, expect: int = 0):
    """Reopen with a route bound to *session_id*; return the recovery report and the first
    *expect* outbounds the route got."""
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        report = await rt.recover()
        with trio.fail_after(10):
            delivered = await route.wait_delivered(expect) if expect else []
    return report, delivered


async def test_a_message_held_when_its_process_stopped_is_told_once(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        await rt.hold_inbound(session_id, notice="Not answered: hello", message_id="m1",
                              channel="web")
    assert held_count(db_path) == 1
    report, [notice] = await _recover(db_path, workspace, session_id, expect=1)
    assert report.unanswered == 1
    assert notice.kind == "notice"
    assert notice.text == "Not answered: hello"
    assert notice.channel == "web"
    assert dict(notice.metadata) == {"unanswered": True, "message_ids": ("m1",)}
    assert held_count(db_path) == 0
    report, _ = await _recover(db_path, workspace, session_id)
    assert report.unanswered == 0


async def test_recovery_at_open_tells_in_arrival_order(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session()
        for n in range(3):
            await rt.hold_inbound(session_id, notice=f"not answered {n}")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 3
        notices = [d for d in await rt.deliveries(session_id) if d.kind == "notice"]
        assert [d.text for d in sorted(notices, key=lambda d: d.seq)] == [
            "not answered 0", "not answered 1", "not answered 2"]
    assert held_count(db_path) == 0


async def test_recovery_tells_many_sessions_in_shared_commits_each_in_order(
        db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        sessions = [await rt.create_session() for _ in range(20)]
        for n in range(3):  # interleaved: each session's holds apart from each other
            for session_id in sessions:
                await rt.hold_inbound(session_id, notice=f"not answered {n}")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 60
        # 60 notices and their releases: told one after another they would be 60 batches.
        assert rt.store.statistics().largest_batch >= 20
        for session_id in sessions:
            notices = [d for d in await rt.deliveries(session_id) if d.kind == "notice"]
            assert [d.text for d in sorted(notices, key=lambda d: d.seq)] == [
                "not answered 0", "not answered 1", "not answered 2"]
    assert held_count(db_path) == 0


@pytest.mark.parametrize("end", ["completed", "failed", "steer", "cancel_command"])
async def test_a_turn_that_ends_releases_the_messages_it_answered(db_path, workspace,
                                                                  end) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session()
        held = await rt.hold_inbound(session_id, notice="not answered")
        expected = (pytest.raises(ValueError, match="the agent broke") if end == "failed"
                    else contextlib.nullcontext())
        with expected:
            async with rt.open_turn(session_id, inbound_ids=[held]) as ctx:
                if end == "failed":
                    raise ValueError("the agent broke")
                if end != "completed":
                    ctx.cancel(end)
                    await trio.sleep_forever()
        assert held_count(db_path) == 0
    report, _ = await _recover(db_path, workspace, session_id)
    assert report.unanswered == 0


async def test_a_turn_the_stop_cuts_keeps_its_messages_for_recovery(db_path, workspace) -> None:
    began = trio.Event()

    async def turn(rt, session_id: str, held: str) -> None:
        async with rt.open_turn(session_id, inbound_ids=[held]):
            began.set()
            await trio.sleep_forever()

    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session()
        held = await rt.hold_inbound(session_id, notice="cut short")
        rt.start_task("turn", turn, rt, session_id, held)
        await began.wait()
    assert held_count(db_path) == 1
    report, [notice] = await _recover(db_path, workspace, session_id, expect=1)
    assert report.unanswered == 1
    assert notice.text == "cut short"


async def test_a_reply_that_settles_its_message_releases_it_before_the_turn_ends(
        db_path, workspace) -> None:
    """The reply and the release are one commit: a stop (or crash) after the reply and before
    the turn's end leaves nothing to tell."""
    replied = trio.Event()

    async def turn(rt, session_id: str, held: str) -> None:
        async with rt.open_turn(session_id, inbound_ids=[held]) as ctx:
            await ctx.output.send_text("the answer", settles=[held])
            replied.set()
            await trio.sleep_forever()  # cut by the stop: its end releases nothing

    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session()
        held = await rt.hold_inbound(session_id, notice="not answered")
        rt.start_task("turn", turn, rt, session_id, held)
        await replied.wait()
        assert held_count(db_path) == 0
    report, _ = await _recover(db_path, workspace, session_id)
    assert report.unanswered == 0


async def test_a_notice_that_settles_a_message_releases_it(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session()
        first = await rt.hold_inbound(session_id, notice="one")
        second = await rt.hold_inbound(session_id, notice="two")
        await rt.notify(session_id, "told about one", settles=[first])
        await rt.release_inbound([second, "inbound_never_held"])
        assert held_count(db_path) == 0
    report, _ = await _recover(db_path, workspace, session_id)
    assert report.unanswered == 0


async def test_a_session_settles_only_its_own_messages(db_path, workspace) -> None:
    """A reply, a turn's end or a notice in one session never releases another session's
    message (a host's mix-up of ids): that one is still told after a restart."""
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        here, there = await rt.create_session(), await rt.create_session()
        theirs = await rt.hold_inbound(there, notice="theirs, not answered")
        async with rt.open_turn(here, inbound_ids=[theirs]) as ctx:
            await ctx.output.send_text("an answer here", settles=[theirs])
        await rt.notify(here, "a notice here", settles=[theirs])
        assert held_count(db_path) == 1
    report, [notice] = await _recover(db_path, workspace, there, expect=1)
    assert report.unanswered == 1
    assert notice.text == "theirs, not answered"


async def test_a_message_of_a_session_cleared_since_is_released_without_a_notice(
        db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id, _ = await rt.resolve_conversation("web", "chat:1")
        await rt.hold_inbound(session_id, notice="not answered")
        assert await rt.forget_conversation("web", "chat:1") == session_id
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert rt.scanner.statistics().totals.unanswered == 0
        assert [d for d in await rt.deliveries(session_id) if d.kind == "notice"] == []
    assert held_count(db_path) == 0


async def test_a_database_of_the_previous_schema_is_migrated_and_holds_messages(
        db_path, workspace) -> None:
    """A database written by the code before held messages (schema v3) opens: v4 adds the
    table and the index in place, and what the old process left is kept."""
    db_path.parent.mkdir(parents=True)
    conn = sqlite3.connect(db_path)
    for version, script in MIGRATIONS[:3]:
        conn.executescript(script)
        conn.execute(f"PRAGMA user_version = {version}")
    conn.execute("INSERT INTO sessions (session_id, core_id, channel, created_at, updated_at) "
                 "VALUES ('old_session', 'default', 'web', 0, 0)")
    conn.commit()
    conn.close()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert (await rt.session("old_session")).channel == "web"
        await rt.hold_inbound("old_session", notice="left by the new code")
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()
    report, [notice] = await _recover(db_path, workspace, "old_session", expect=1)
    assert report.unanswered == 1
    assert notice.text == "left by the new code"


async def test_bad_holds_and_releases_are_refused_by_name(rt) -> None:
    session_id = await rt.create_session()
    for kwargs, field in (({"notice": ""}, "notice"),
                          ({"notice": "x", "message_id": ""}, "message_id"),
                          ({"notice": "x", "channel": 5}, "channel"),
                          ({"notice": "bad \ud800"}, "notice")):
        with pytest.raises(ValidationError) as caught:
            await rt.hold_inbound(session_id, **kwargs)
        assert caught.value.field == field
    with pytest.raises(ValidationError) as caught:
        await rt.hold_inbound("", notice="x")
    assert caught.value.field == "session_id"
    with pytest.raises(TypeError):
        await rt.hold_inbound(session_id, notice=None)
    with pytest.raises(ValidationError) as caught:
        await rt.release_inbound("inbound_1")  # a lone id would be read as its characters
    assert caught.value.field == "inbound_ids"
    with pytest.raises(ValidationError) as caught:
        await rt.notify(session_id, "x", settles="inbound_1")
    assert caught.value.field == "settles"
    with pytest.raises(ValidationError) as caught:
        async with rt.open_turn(session_id, inbound_ids=[""]):
            pass
    assert caught.value.field == "inbound_ids"
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.send_text("x", settles="inbound_1")
        assert caught.value.field == "settles"
    assert [d for d in await rt.deliveries(session_id)] == []  # nothing half-written


async def test_the_hand_back_look_ups_refuse_bad_ids_by_name(rt) -> None:
    for call, field in ((lambda: rt.unrouted_sessions("", "k"), "channel"),
                        (lambda: rt.unrouted_sessions("web", {"k": 1}), "conversation_key"),
                        (lambda: rt.unrouted_written(None), "session_id")):
        with pytest.raises(ValidationError) as caught:
            await call()
        assert caught.value.field == field
    assert await rt.unrouted_sessions("web", "nobody") == []
