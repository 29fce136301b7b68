"""A lane restarted after a crash settles what the crashed incarnation left, even when the
write that settles it fails too."""

from __future__ import annotations

import trio
import trio.testing

import tidings
from tidings.testing import FaultPlan, FaultRule, MemoryRoute, Seam, writer_gate


async def crash_mid_delivery(db_path, workspace, plan: FaultPlan) -> tuple[int, list[str]]:
    """Crash a lane while its route is stalled in deliver(); return the writer's
    before_message hits just before the crash, and how each delivery ended."""
    route = MemoryRoute()
    route.stall()
    with trio.fail_after(20):  # a watchdog: the bug this pins is a delivery that never ends
        async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                first = await ctx.output.send_text("m0")
                await route.wait_attempted(1)
                second = await ctx.output.send_text("m1")
            await trio.testing.wait_all_tasks_blocked()
            hits = plan.hits("writer", Seam.BEFORE_MESSAGE)
            assert rt.dispatcher.supervisor.inject_cancel(rt.dispatcher.lane(session_id).name)
            route.release()
            outcomes = [await first.wait(), await second.wait()]
    return hits, outcomes


async def test_a_failed_settle_write_is_settled_by_the_next_incarnation(tmp_path,
                                                                        workspace) -> None:
    hits, outcomes = await crash_mid_delivery(tmp_path / "count.db", workspace, FaultPlan())
    assert outcomes == ["unknown", "delivered"]
    # Now the write that settles the crash (the lane's next write) is lost to a writer crash.
    plan = FaultPlan([FaultRule(Seam.BEFORE_MESSAGE, child="writer", nth=hits + 1)])
    _, outcomes = await crash_mid_delivery(tmp_path / "run.db", workspace, plan)
    assert len(plan.injected) == 1
    assert outcomes == ["unknown", "delivered"]



async def test_a_lane_cancelled_while_its_sent_write_waits_still_resolves_it(
        db_path, workspace) -> None:
    """The lane crashes while its write recording ``sent`` waits for the writer: the write
    commits all the same, and the next incarnation must resolve the delivery from what is
    durable instead of waiting for a move that can no longer apply."""
    route = MemoryRoute()
    route.stall()
    with trio.fail_after(20):  # a watchdog: the bug this pins is a delivery that never ends
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_text("m0")
            await route.wait_attempted(1)
            async with writer_gate(rt.store) as gate:
                route.release()
                await trio.testing.wait_all_tasks_blocked()  # its sent write waits at the gate
                lane = rt.dispatcher.lane(session_id)
                assert (route.texts(), lane.committing) == (["m0"], 1)
                assert rt.dispatcher.supervisor.inject_cancel(lane.name)
                await trio.testing.wait_all_tasks_blocked()  # restarted: settling, at the gate
                gate.release()
            assert await handle.wait() == "delivered"
            status = await rt.delivery_status(handle.delivery_id)
    assert status.status == "sent"
