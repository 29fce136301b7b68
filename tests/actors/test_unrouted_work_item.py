"""An ``unrouted`` delivery's ``delivery.send`` work item reads ``unrouted``, never
``completed`` (issue 3): nobody received it, and its work is not done (``rt.requeue`` gives
it back to its lane when a route returns). Before, it read ``completed``, the word of a
``sent`` one, so a tool or an operator reading work items took it for a success."""

from __future__ import annotations

import json

import trio

from tidings.supervisor.cli import main
from tidings.supervisor.testing import database_violations
from tidings.testing import MemoryRoute

from .conftest import rows

HANG = 30  # (trio's clock: the autojump clock moves it only while everything waits)


def _work(db_path, delivery_id: str) -> tuple[str, str]:
    [found] = rows(db_path, "SELECT o.status, w.status FROM outbox AS o "
                            "JOIN work_items AS w ON w.work_id = o.work_id "
                            "WHERE o.delivery_id = ?", delivery_id)
    return found


async def test_an_unrouted_row_requeued_is_pending_then_completed_once_sent(
        rt, db_path, autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            lost = await ctx.output.send_text("nobody listens")  # no route yet
            assert await lost.wait() == "unrouted"
            assert _work(db_path, lost.delivery_id) == ("unrouted", "unrouted")
            route.stall()  # a route returns, its first delivery in flight: the lane is busy
            rt.router.bind(session_id, route)
            busy = await ctx.output.send_text("in flight")
            await route.wait_attempted(1)
            assert await rt.requeue(session_id, [lost.delivery_id]) == [lost.delivery_id]
            assert _work(db_path, lost.delivery_id) == ("queued", "pending")
            status = await rt.delivery_status(lost.delivery_id)
            assert (status.status, status.work_status) == ("queued", "pending")
            route.release()
            assert await busy.wait() == "delivered"
            await route.wait_delivered(2)
    assert [o.delivery_id for o in route.delivered] == [busy.delivery_id, lost.delivery_id]
    assert _work(db_path, lost.delivery_id) == ("sent", "completed")
    assert database_violations(db_path) == []


async def test_an_unrouted_row_that_stays_unrouted_passes_the_invariants(
        rt, db_path, autojump_clock) -> None:
    """The testing invariants agree: an ``unrouted`` row's work item is ``unrouted`` (they
    took ``completed`` for the right one, so they would call the fixed store wrong)."""
    session_id = await rt.create_session(channel="web")
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("nobody listens")
            assert await handle.wait() == "unrouted"
    assert _work(db_path, handle.delivery_id) == ("unrouted", "unrouted")
    assert database_violations(db_path) == []


async def test_tidings_status_shows_an_unrouted_deliverys_work_item_unrouted(
        rt, db_path, capsys, autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("nobody listens")
            assert await handle.wait() == "unrouted"
    [(work_id,)] = rows(db_path, "SELECT work_id FROM outbox WHERE delivery_id = ?",
                        handle.delivery_id)
    assert await trio.to_thread.run_sync(
        main, ["status", "--db", str(db_path), handle.delivery_id]) == 0
    out, _ = capsys.readouterr()
    [line] = [line for line in out.splitlines() if line.startswith("work item")]
    assert line.split() == ["work", "item", work_id, "(unrouted)"]
    assert await trio.to_thread.run_sync(
        main, ["status", "--db", str(db_path), handle.delivery_id, "--json"]) == 0
    data = json.loads(capsys.readouterr()[0])
    assert (data["status"], data["outbox_status"], data["work_status"]) == (
        "unrouted", "unrouted", "unrouted")
