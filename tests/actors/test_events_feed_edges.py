"""The live event feed (``rt.events``) under unusual but legal use."""

from __future__ import annotations

import trio
import trio.testing

import tidings
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
