"""A claimed row waiting for a binder's hold when the runtime stops goes back to ``queued``.

A row its lane claimed (``sending``) and has not handed to a route waits while a binder holds
its session (``rt.hold_binds``). Its platform I/O provably never began, so a stop goes on
without it: it goes back to ``queued`` (``unknown`` then ``queued``, one write, as a hand-back
does) within the stop's grace, and is delivered after the next start. It stayed ``sending``
until the grace ran out, then was ``unknown`` at the next start, never delivered.
"""

from __future__ import annotations

import contextlib

import trio
import trio.testing

import tidings
from tidings.testing import MemoryRoute, writer_gate

GRACE = 600.0
"""The stop's grace (trio seconds, on ``autojump_clock``): the test fails if the stop waits it
out. Counted on the mock clock, the stop's time is not a real-time race with a loaded
machine, and waiting the grace out costs no real time."""


async def _wait_status(rt, delivery_id: str, status: str) -> None:
    async for event in rt.events(after_seq=0):
        if event.delivery_id == delivery_id and event.type == f"delivery.{status}":
            return


async def test_a_claimed_row_waiting_for_a_hold_at_stop_is_queued_again(
        db_path, workspace, autojump_clock) -> None:
    old, new = MemoryRoute(), MemoryRoute()
    async with contextlib.AsyncExitStack() as hold:
        async with tidings.open_runtime(db_path, workspace=workspace, grace=GRACE) as rt:
            session_id = await rt.create_session(channel="web")
            with trio.fail_after(GRACE):
                old.stall()
                rt.router.bind(session_id, old)
                async with rt.open_turn(session_id) as ctx:
                    first = await ctx.output.send_text("first")
                    await old.wait_attempted(1)  # the lane is inside deliver(first)
                    newer = await ctx.output.send_text("newer")
                async with writer_gate(rt.store) as gate:
                    old.release()  # first's sent and newer's claim queue behind the gate
                    await trio.testing.wait_all_tasks_blocked()
                    await hold.enter_async_context(rt.hold_binds(new))
                    rt.router.bind(session_id, new)  # held: newer waits, claimed for old
                    gate.release()
                await _wait_status(rt, newer.delivery_id, "sending")
                assert await first.wait() == "delivered"
            started = trio.current_time()
        stopped_in = trio.current_time() - started
    assert stopped_in < GRACE / 2  # the stop did not wait out its grace for the held row
    assert old.texts() == ["first"]
    assert new.texts() == []
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        status = await rt.delivery_status(newer.delivery_id)
        assert (status.outbox_status, status.attempts) == ("queued", 1)
        rt.router.bind(session_id, route)
        await rt.recover()
        with trio.fail_after(GRACE):
            await _wait_status(rt, newer.delivery_id, "sent")
    assert route.texts() == ["newer"]
