"""A MemoryRoute driven from a sync test while its deliveries run in a RuntimeThread."""

from __future__ import annotations

import trio

from tidings.testing import MemoryRoute, RuntimeThread


async def _send(rt, route: MemoryRoute):
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        return await ctx.output.send_text("hello")


async def _outcome(handle) -> str:
    with trio.fail_after(10):  # hang guard: a release that woke nobody leaves it stalled
        return await handle.wait()


def test_a_route_released_from_the_test_s_thread_lets_its_stalled_delivery_go(
        tmp_path, workspace) -> None:
    # release() set the gate's event from the test's thread, outside the runtime's trio run:
    # "RuntimeError: must be called from async context", with the event's flag set and the
    # delivery parked on it never woken: stalled for good. stall(), latency and fail are plain
    # attributes and worked from there; release() now does too.
    route = MemoryRoute()
    route.stall()
    with RuntimeThread(tmp_path / "tidings.db", workspace) as thread:
        handle = thread.run(_send, thread.rt, route)
        thread.run(route.wait_attempted, 1)
        route.release()
        assert not route.stalled
        assert thread.run(_outcome, handle) == "delivered"
        route.release()  # not stalled: nothing to do, from any thread
        route.stall()
    route.release()  # its run has ended: nothing waits on it any more
    assert not route.stalled
