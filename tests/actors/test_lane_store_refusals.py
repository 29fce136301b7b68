"""A store that refuses writes for a while (a full disk) stops no runtime and loses nothing.

Before, every lane whose write failed crashed and was restarted at once, failed again, and so
on: a few seconds of a full disk made the routes supervisor give up 11 times, then the
runtime's supervisor gave up too, and the message whose claim had failed was recorded
``failed``. Now a lane waits (0.1 s doubling to 30 s) and tries again, and that message goes
back in line.
"""

from __future__ import annotations

import logging
import sqlite3

import trio

import tidings
from tidings.store import Call
from tidings.supervisor._logging import parse_fields
from tidings.testing import MemoryRoute


def _limit_pages(extra: int):
    def limit(conn: sqlite3.Connection) -> None:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages + extra}").fetchone()
    return limit


def _unlimited(conn: sqlite3.Connection) -> None:
    conn.execute("PRAGMA max_page_count = 4294967294").fetchone()


async def _full_disk_episode(rt, sessions: int, per_session: int, refusing_for: float):
    """Queue messages behind stalled routes, fill the database (no page may be added), let
    the routes go for *refusing_for* seconds, then give the space back."""
    routes = [MemoryRoute() for _ in range(sessions)]
    handles = []
    for route in routes:
        route.stall()
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handles.append([await ctx.output.send_text(f"{session_id} m{i}")
                            for i in range(per_session)])
        await route.wait_attempted(1)
    await rt.store.commit([Call(_limit_pages(0))])
    for route in routes:
        route.release()
    await trio.sleep(refusing_for)
    delivered_while_full = sum(len(route.texts()) for route in routes)
    await rt.store.commit([Call(_unlimited)])
    return routes, handles, delivered_while_full


async def test_a_full_disk_stops_no_runtime_and_every_message_goes_out_once(
        db_path, workspace, quick_autojump_clock, caplog) -> None:
    caplog.set_level(logging.WARNING)
    sessions, per_session = 3, 10
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        routes, handles, while_full = await _full_disk_episode(
            rt, sessions, per_session, refusing_for=60.0)
        outcomes = [[await h.wait() for h in session] for session in handles]
        restarts = rt.dispatcher.supervisor.restart_log
        statuses = {(s.outbox_status, s.attempts) for s in await rt.deliveries()}
    # The disk was full: the lanes could not record what they delivered and stopped there.
    assert while_full < sessions * per_session
    refusals = [parse_fields(r.getMessage()) for r in caplog.records
                if r.getMessage().startswith("event=lane_store_error")]
    assert refusals
    assert all("disk is full" in line["error"] for line in refusals)
    # Waiting, not crashing: no restart, and in 60 s at most a dozen tries per lane.
    assert list(restarts) == []
    assert len(refusals) <= sessions * 12
    # Then everything went out, in order, once; the refused claim was not recorded failed.
    assert outcomes == [["delivered"] * per_session] * sessions
    for route, session in zip(routes, handles, strict=True):
        session_id = session[0].session_id
        assert route.texts() == [f"{session_id} m{i}" for i in range(per_session)]
    assert statuses == {("sent", 1)}


async def test_a_stop_while_the_disk_is_full_leaves_each_row_for_the_next_start(
        db_path, workspace, quick_autojump_clock) -> None:
    route = MemoryRoute()
    route.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=1.0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            for i in range(30):
                await ctx.output.send_text(f"m{i}")
        await route.wait_attempted(1)
        await rt.store.commit([Call(_limit_pages(0))])
        route.release()
        await trio.sleep(60)  # the lane waits out a refusal
        # The stop ends that wait: the lane tries once more and gives up (the disk is
        # still full), and the runtime closes normally.
    conn = sqlite3.connect(db_path)
    try:
        left = dict(conn.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status"))
    finally:
        conn.close()
    # Nothing was recorded failed (nor lost): the rows the lane did not get to stay queued
    # for the next start, and a row delivered but not recorded ``sent`` is ``sending``
    # (``unknown`` at the next start), as after any stop that cuts a lane short.
    assert sum(left.values()) == 30
    assert set(left) <= {"sent", "sending", "queued"}
    assert left.get("sending", 0) <= 1
    assert len(route.texts()) == len(set(route.texts())) < 30
    assert len(route.texts()) == left.get("sent", 0) + left.get("sending", 0)
