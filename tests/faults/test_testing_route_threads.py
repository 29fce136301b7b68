"""A MemoryRoute driven from a sync test while its deliveries run in a RuntimeThread."""

from __future__ import annotations

import threading

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


def test_a_route_released_from_another_trio_run_wakes_its_stalled_delivery() -> None:
    # release() from inside a trio run set the gate's event directly, as if that run were the
    # delivery's: the parked task was rescheduled into the releasing run (which then failed
    # with an AssertionError in trio's scheduler) and the delivery never woke. A trio test
    # (or a second RuntimeThread) releasing a route stalled in a RuntimeThread does just that.
    from tidings.actors import Outbound

    route = MemoryRoute()
    route.stall()
    parked = threading.Event()
    outcome: list[object] = []

    async def deliver_there() -> None:
        outbound = Outbound(session_id="s1", delivery_id="d1", kind="message", blocks=(),
                            text="hello", seq=1)

        async def tell_parked() -> None:
            await route.wait_attempted(1)  # deliver() parks on the gate before this returns
            parked.set()

        with trio.fail_after(10):  # a plain trio.run: real seconds
            async with trio.open_nursery() as nursery:
                nursery.start_soon(tell_parked)
                await route.deliver(outbound)
        outcome.append("delivered")

    def run_there() -> None:
        try:
            trio.run(deliver_there)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            outcome.append(exc)

    there = threading.Thread(target=run_there)
    there.start()
    try:
        assert parked.wait(10)

        async def release_here() -> None:
            route.release()
            await trio.lowlevel.checkpoint()

        trio.run(release_here)
    finally:
        route.release()  # never leave the other run parked, whatever happened above
        there.join(10)
    assert outcome == ["delivered"]
    assert [o.delivery_id for o in route.delivered] == ["d1"]
