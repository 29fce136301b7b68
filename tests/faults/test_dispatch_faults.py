"""Faults on the way from a commit to a session lane never strand a delivery."""

from __future__ import annotations

import trio
import trio.testing

import tidings
from tidings.testing import FaultPlan, FaultRule, MemoryRoute, Seam


async def test_a_failed_post_to_a_lane_falls_back_to_the_outbox(db_path, workspace) -> None:
    # hit 1 wakes the lane for m0 (written claimed); hit 2 would post m1: it fails.
    plan = FaultPlan([FaultRule(Seam.SEND, child="route:*", nth=2)])
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
                third = await ctx.output.send_text("m2")
            route.release()
            outcomes = [await h.wait() for h in (first, second, third)]
    assert [(r.child, r.seam) for r in plan.injected] == [(route_name(plan), "send")]
    assert outcomes == ["delivered"] * 3
    assert route.texts() == ["m0", "m1", "m2"]


def route_name(plan: FaultPlan) -> str:
    return plan.injected[0].child


async def test_a_lost_wake_up_does_not_leave_an_idle_lane_parked(db_path, workspace) -> None:
    # m0 is written claimed and its lane woken (hit 1); the lane delivers it and parks, idle.
    # m1 is written claimed too: its wake-up (hit 2) fails.
    plan = FaultPlan([FaultRule(Seam.SEND, child="route:*", nth=2)])
    route = MemoryRoute()
    with trio.fail_after(20):  # a watchdog: the bug this pins is a delivery that never ends
        async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                assert await (await ctx.output.send_text("m0")).wait() == "delivered"
                await trio.testing.wait_all_tasks_blocked()  # the lane is parked
                second = await ctx.output.send_text("m1")
                await trio.testing.wait_all_tasks_blocked()  # no timer has fired since
                assert route.texts() == ["m0", "m1"]
            assert await second.wait() == "delivered"
    assert len(plan.injected) == 1


async def _restart_routes_around_a_parked_lane(rt, a: str, route: MemoryRoute, b: str, *,
                                               crashes: int) -> None:
    """Deliver "m0" in session *a* (its lane then parks), send *crashes* rows in *b*, whose
    lane the fault plan crashes at each deliver() until the lanes supervisor gives up and the
    root restarts ``routes``, then deliver "m1" in *a*."""
    rt.router.bind(a, route)
    rt.router.bind(b, MemoryRoute())
    async with rt.open_turn(a) as ctx:
        assert await (await ctx.output.send_text("m0")).wait() == "delivered"
    await trio.testing.wait_all_tasks_blocked()  # a's lane is parked
    async with rt.open_turn(b) as ctx:
        crashing = [await ctx.output.send_text(f"b{n}") for n in range(crashes)]
    for handle in crashing:
        await handle.wait()
    assert any(r.child == "routes" for r in rt.supervisor.restart_log)
    async with rt.open_turn(a) as ctx:
        assert await (await ctx.output.send_text("m1")).wait() == "delivered"


async def test_a_restart_of_routes_leaves_dispatch_running(db_path, workspace,
                                                           autojump_clock) -> None:
    # Session b's lane crashes at every delivery until the routes supervisor gives up
    # (over 100 restarts in 10 s) and the root restarts routes. Stopping the lanes closed the
    # mailbox session a's idle lane was parked on, and the lane took that for the runtime
    # stopping (the dispatcher's stopping flag), which nothing reset when routes came back:
    # every later row of every session stayed queued, the runtime up. Found by
    # run_chaos(acking=0.7, intensity=Intensity(1000)), seed 3041 at rate 0.01.
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        a = await rt.create_session(channel="web")
        b = await rt.create_session(channel="web")
    plan = FaultPlan([FaultRule(Seam.DELIVER, child=f"route:{b}:*", action="raise")])
    route = MemoryRoute()
    with trio.fail_after(60):  # a watchdog: the bug this pins is a delivery that never ends
        async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
            await _restart_routes_around_a_parked_lane(rt, a, route, b, crashes=110)
    assert route.texts() == ["m0", "m1"]


async def test_a_restart_of_routes_keeps_the_count_of_running_lanes(db_path, workspace,
                                                                    autojump_clock) -> None:
    # The lanes stopped with the old routes incarnation exit after detach() has already set
    # the count to 0 and cleared their names: each exit took one more off it, so with two
    # lanes running it said 1 (rt.statistics().dispatch.running), and stop(), which waits
    # for the count to reach 0 before it cancels the lanes still running, could cut a busy
    # lane's deliver() short without its grace.
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        a = await rt.create_session(channel="web")
        b = await rt.create_session(channel="web")
    plan = FaultPlan([FaultRule(Seam.DELIVER, child=f"route:{b}:*", action="raise", times=101)])
    with trio.fail_after(60):
        async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
            await _restart_routes_around_a_parked_lane(rt, a, MemoryRoute(), b, crashes=101)
            await trio.testing.wait_all_tasks_blocked()
            lanes = [child for child in rt.dispatcher.supervisor.statistics().children
                     if child.state == "running"]
            assert len(lanes) == 2
            assert rt.statistics().dispatch.running == 2
