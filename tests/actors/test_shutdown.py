"""Stopping and starting again: grace, deliveries cut short, queued rows picked up."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import tidings
from tidings.errors import RuntimeClosedError
from tidings.testing import MemoryRoute


async def test_a_delivery_still_running_at_exit_is_cancelled_and_becomes_unknown(
        db_path, workspace, autojump_clock) -> None:
    route = MemoryRoute()
    route.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=2.0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("in flight")
        await route.wait_attempted(1)
        started = trio.current_time()
    assert trio.current_time() - started >= 2.0  # the grace was given, then the cancel
    assert route.delivered == []
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        status = await rt.delivery_status(handle.delivery_id)
        assert (status.status, status.outbox_status, status.attempts) == ("unknown", "unknown",
                                                                          1)
        assert "stopped before recording" in status.last_error


async def test_a_delivery_that_finishes_within_the_grace_is_sent(db_path, workspace,
                                                                 autojump_clock) -> None:
    route = MemoryRoute(latency=1.0)
    async with tidings.open_runtime(db_path, workspace=workspace, grace=5.0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("almost done")
        await route.wait_attempted(1)
    assert route.texts() == ["almost done"]
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert (await rt.delivery_status(handle.delivery_id)).status == "sent"


async def test_queued_rows_left_at_exit_are_delivered_after_a_manual_recover(
        db_path, workspace, autojump_clock) -> None:
    stuck = MemoryRoute()
    stuck.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=1.0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, stuck)
        async with rt.open_turn(session_id) as ctx:
            handles = [await ctx.output.send_text(f"m{i}") for i in range(4)]
        await stuck.wait_attempted(1)
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(session_id, route)
        report = await rt.recover()
        assert report.queued_sessions == 1
        for handle in handles[1:]:
            await _wait_status(rt, handle.delivery_id, "sent")
        assert (await rt.delivery_status(handles[0].delivery_id)).status == "unknown"
    assert route.texts() == ["m1", "m2", "m3"]  # in order, the unknown one never replayed


async def test_sends_after_the_runtime_stopped_are_refused(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            pass
    try:
        await ctx.output.send_text("too late")
    except RuntimeClosedError:
        pass
    else:
        raise AssertionError("a send after exit must be refused")


async def _wait_status(rt, delivery_id: str, status: str) -> None:
    async for event in rt.events(after_seq=0):
        if event.delivery_id == delivery_id and event.type == f"delivery.{status}":
            return


async def test_a_turn_or_notice_after_the_runtime_closed_is_runtime_closed(db_path,
                                                                          workspace) -> None:
    """After ``open_runtime`` has exited, opening a turn or sending a notice raises
    :class:`RuntimeClosedError` (what a host catches for "stopping"), not the store's error
    from a session read the closed runtime can no longer make."""
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
    with pytest.raises(RuntimeClosedError):
        async with rt.open_turn(session_id):
            pass
    with pytest.raises(RuntimeClosedError):
        await rt.notify(session_id, "late")
