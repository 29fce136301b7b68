"""A stop while the store refuses writes (a full disk) makes no supervisor give up.

README ("When the disk is full"): a lane that cannot record what it did waits and tries
again, "it does not crash, so no supervisor gives up"; "a stop meanwhile ends the wait and
tries once more; what it still cannot write is left as after any stop". The lane re-raised
that last refusal: its incarnation crashed, the ``routes`` supervisor restarted it at once
(a transient child), the new one's settle was refused too, and so on, 101 times within the
stop, until ``routes`` gave up (``restart_intensity_exceeded``, ``state=failed``).
"""

from __future__ import annotations

import logging
import sqlite3

import trio

import tidings
from tidings.store import Call
from tidings.supervisor._logging import parse_fields
from tidings.testing import MemoryRoute


def _refuse_writes(conn: sqlite3.Connection) -> None:
    """Every later write of the writer's connection is refused, as on a full disk where the
    write-ahead log cannot grow (a database held to its page count still takes updates)."""
    conn.execute("PRAGMA query_only = 1")


async def test_a_stop_while_the_disk_is_full_crashes_no_lane_and_no_supervisor_gives_up(
        db_path, workspace, quick_autojump_clock, caplog) -> None:
    caplog.set_level(logging.INFO, logger="tidings")
    route = MemoryRoute()
    route.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=1.0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            for i in range(5):
                await ctx.output.send_text(f"m{i}")
        await route.wait_attempted(1)
        await rt.store.commit([Call(_refuse_writes)])
        route.release()
        await trio.sleep(5)  # the lane waits out a refusal, then the stop ends the wait
    refused = [record for record in caplog.records
               if "event=lane_store_error" in record.getMessage()]
    assert refused  # the lane did meet the refusal
    assert [r for r in caplog.records if "event=lane_store_error_at_stop" in r.getMessage()]
    events = [parse_fields(record.getMessage()) for record in caplog.records
              if record.name == "tidings.supervisor"]
    assert [e for e in events if e.get("event") == "restart_intensity_exceeded"] == []
    crashed = [e for e in events if e.get("event") in ("child_failed", "child_restarted")
               and e.get("child", "").startswith("route:")]
    assert crashed == []
    assert [e for e in events if e.get("state") == "failed"] == []
    conn = sqlite3.connect(db_path)
    try:
        left = dict(conn.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status"))
    finally:
        conn.close()
    # Left as after any stop: nothing failed or lost, at most the delivered row `sending`.
    assert sum(left.values()) == 5
    assert set(left) <= {"sent", "sending", "queued"}
    assert left.get("sending", 0) <= 1
