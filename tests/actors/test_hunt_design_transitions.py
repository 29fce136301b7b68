"""DESIGN.md's durable state machines, checked move by move through the public API.

Each test drives one named transition of the outbox row (or of the in-memory item) and reads
the database to check the row, its ``delivery.send`` work item and the events the move appends
(exactly once, in order). Tests that must show something does not stay stuck wait under a
real-time hang guard (as in ``test_races.py``).
"""

from __future__ import annotations

import pathlib

import trio

from .conftest import rows

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works."""


def _row(db_path: pathlib.Path, delivery_id: str) -> tuple[str, str, int]:
    """``(outbox status, work item status, attempts)`` of one delivery."""
    [found] = rows(db_path, "SELECT o.status, w.status, o.attempts FROM outbox AS o "
                            "JOIN work_items AS w ON w.work_id = o.work_id "
                            "WHERE o.delivery_id = ?", delivery_id)
    return found


def _events(db_path: pathlib.Path, delivery_id: str) -> list[str]:
    return [kind for (kind,) in rows(db_path, "SELECT type FROM events WHERE delivery_id = ? "
                                              "ORDER BY event_seq", delivery_id)]


async def test_requeue_moves_only_rows_of_the_session_it_names(rt, db_path) -> None:
    """``rt.requeue(session_id, ids)`` hands rows *of session_id* back to its lane. A row of
    another session is not moved (its lane is not the one kicked, and that session's channel
    never asked)."""
    mine = await rt.create_session(channel="web")
    other = await rt.create_session(channel="web")
    with trio.fail_after(HANG):
        async with rt.open_turn(other) as ctx:
            handle = await ctx.output.send_text("theirs")  # no route: unrouted
            assert await handle.wait() == "unrouted"
        assert await rt.requeue(mine, [handle.delivery_id]) == []
    assert _row(db_path, handle.delivery_id)[0] == "unrouted"
    assert _events(db_path, handle.delivery_id) == ["delivery.queued", "delivery.unrouted"]
