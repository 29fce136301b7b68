"""The live event feed (``rt.events``) under unusual but legal use."""

from __future__ import annotations

import sqlite3
from contextlib import closing

import pytest
import trio
import trio.testing

import tidings
from tidings.errors import ValidationError
from tidings.testing import MemoryRoute

from .conftest import rows


async def test_a_feed_shared_by_two_tasks_gives_each_event_once(db_path, workspace) -> None:
    # Two workers taking events from one feed (as from a memory channel's receive side): both
    # asked for the next page while the buffer was empty, both read the same events, and both
    # pages went into the buffer: every event came out twice.
    seen: list[int] = []

    async def take(feed) -> None:
        async for event in feed:
            seen.append(event.seq)

    with trio.fail_after(30):  # hang guard
        # The runtime closes first: the feed reads what is left from the file, both loops end.
        async with (trio.open_nursery() as nursery,
                    tidings.open_runtime(db_path, workspace=workspace) as rt):
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, MemoryRoute())
            async with rt.open_turn(session_id) as ctx:
                handles = [await ctx.output.send_text(f"{i}") for i in range(5)]
            for handle in handles:
                assert await handle.wait() == "delivered"
            feed = rt.events(after_seq=0)
            nursery.start_soon(take, feed)
            nursery.start_soon(take, feed)
            await trio.testing.wait_all_tasks_blocked()
            await rt.create_session(channel="web")  # one more, while both wait
    assert sorted(seen) == [seq for (seq,) in rows(db_path, "SELECT event_seq FROM events "
                                                            "ORDER BY event_seq")]


async def test_an_after_seq_past_the_newest_event_is_refused_by_name(db_path, workspace) -> None:
    # A follower keeps the seq it has seen and resumes after a restart; the database was
    # meanwhile restored from an older copy (or another one given). Its newest event is
    # before that seq, so the events written next, new to the follower, were skipped in
    # silence until their seqs passed the old one.
    copy = db_path.with_name("copy.db")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        await rt.create_session(channel="web")
        async with rt.open_turn(await rt.create_session(channel="web")):
            pass
    with closing(sqlite3.connect(db_path)) as source, closing(sqlite3.connect(copy)) as target:
        source.backup(target)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        await rt.create_session(channel="web")
        [(followed,)] = rows(db_path, "SELECT MAX(event_seq) FROM events")
    async with tidings.open_runtime(copy, workspace=workspace) as rt:
        [(newest,)] = rows(copy, "SELECT MAX(event_seq) FROM events")
        assert newest < followed
        with trio.fail_after(5):  # a hang guard: the refusal comes at once
            with pytest.raises(ValidationError) as caught:
                await rt.events(after_seq=followed).__anext__()
        assert caught.value.field == "after_seq"
        assert str(newest) in str(caught.value)
        # The newest seq itself is where a caught-up follower stands: it waits for the next.
        feed = rt.events(after_seq=newest)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rt.create_session, "web")
            with trio.fail_after(5):
                event = await feed.__anext__()
        assert (event.seq, event.type) == (newest + 1, "session.created")
