"""A session lane that crashes loses nothing and sends nothing twice."""

from __future__ import annotations

import sqlite3

import trio

import tidings
from tidings.errors import StoreError
from tidings.store import Call
from tidings.supervisor import FaultPlan, FaultRule, Seam
from tidings.testing import MemoryRoute


async def test_a_message_lost_with_a_crashed_lane_is_reread_in_order(db_path, workspace) -> None:
    plan = FaultPlan([FaultRule(Seam.BEFORE_MESSAGE, child="route:*", nth=2)])
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        route.stall()
        async with rt.open_turn(session_id) as ctx:
            handles = [await ctx.output.send_text(f"m{i}") for i in range(5)]
        route.release()
        assert [await h.wait() for h in handles] == ["delivered"] * 5
        restarts = rt.dispatcher.supervisor.restart_log
    assert route.texts() == [f"m{i}" for i in range(5)]
    assert [record.action for record in restarts] == ["restart"]
    assert restarts[0].error_type == "InjectedFault"
    assert [record.seam for record in plan.injected] == [Seam.BEFORE_MESSAGE]


async def test_a_lane_cancelled_mid_delivery_marks_that_row_unknown(db_path, workspace) -> None:
    route = MemoryRoute()
    route.stall()
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("interrupted")
            second = await ctx.output.send_text("after")
        await route.wait_attempted(1)
        lane = rt.dispatcher.lane(session_id)
        assert rt.dispatcher.supervisor.inject_cancel(lane.name)
        route.release()
        assert await first.wait() == "unknown"
        assert await second.wait() == "delivered"
        status = await rt.delivery_status(first.delivery_id)
    assert (status.status, status.attempts) == ("unknown", 1)
    assert "crashed while delivering" in status.last_error
    assert route.texts() == ["after"]  # the interrupted one is never replayed


async def test_a_failed_background_sent_write_is_recorded_again_without_a_resend(rt) -> None:
    # The lane records `sent` through Store.commit_nowait while it waits for more work. Make
    # the first such write fail in the writer (its transaction rolls back): the row must be
    # recorded `sent` by the lane's foreground flush, and the route must not see it twice.
    failures: list[BaseException] = []
    real = rt.store.commit_nowait

    def boom(conn) -> None:
        raise sqlite3.OperationalError("injected: the disk said no")

    def failing_once(ops, *, on_commit, on_error):
        if failures:
            return real(ops, on_commit=on_commit, on_error=on_error)

        def failed(error: BaseException) -> None:
            failures.append(error)
            on_error(error)

        failures.append(None)  # this call is the one that fails
        return real([*ops, Call(boom)], on_commit=on_commit, on_error=failed)

    rt.store.commit_nowait = failing_once
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    # A bound, not a timing: a lost row would leave wait() hanging forever.
    with trio.fail_after(30):
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("one")
            assert await first.wait() == "delivered"
            second = await ctx.output.send_text("two")
            assert await second.wait() == "delivered"
    assert len(failures) == 2
    assert isinstance(failures[1], StoreError)
    assert "the disk said no" in str(failures[1])
    assert route.texts() == ["one", "two"]  # recorded again, never delivered again
    for handle in (first, second):
        status = await rt.delivery_status(handle.delivery_id)
        assert (status.outbox_status, status.work_status, status.attempts) == \
            ("sent", "completed", 1)
