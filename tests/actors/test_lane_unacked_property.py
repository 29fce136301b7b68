"""Property: with acking routes (``ack_window``, the gateway's kind), however acks, dropped
clients (``abandon_unacked``), binds, re-binds with a hand-back, unbinds and kicks interleave
with a session's sends, every row is delivered and ends ``sent`` once its client acks it, and
then the lane's memory accounting is back to 0: no row left in ``Lane.unacked``,
``unacked_bytes`` 0 (with ``posted``, ``queued_bytes`` and the backlog, as in
``test_lane_hold_order_property.py``).

A drift up in ``unacked_bytes`` would hold every later row of the session for acks that never
come (the ack-window wait compares it with ``lane_bytes``); down, let unacked rows past the
budget. A wait nothing wakes hangs the example (``fail_after``). Acks come for rows in every
state: delivered and unacked, unknown after a drop, claimed or still being handed to the route
(an ack racing the lane's own write), queued (not applied). Small sizes: one runtime
(``RuntimeThread``), a fresh session per example.
"""

from __future__ import annotations

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tidings.testing import MemoryRoute, RuntimeThread

from .test_lane_hold_order_property import _hand_back

HANG = 30.0
"""Real seconds an example waits for something that takes milliseconds when it works."""

_OPS = st.lists(st.one_of(
    st.tuples(st.just("send"), st.integers(1, 3)),
    st.tuples(st.just("bind"), st.integers(0, 3)),     # ack_window (0: a route without one)
    st.tuples(st.just("rebind"), st.integers(1, 3)),   # held, unrouted and unknown handed back
    st.tuples(st.just("ack"), st.integers(0, 1)),      # 0: all delivered, 1: the oldest one
    st.tuples(st.just("ack_everything"), st.just(0)),  # every row sent, whatever its state
    st.tuples(st.just("stalled_ack"), st.just(0)),     # an ack while deliver() runs
    st.tuples(st.just("drop"), st.just(0)),            # the client went: unacked -> unknown
    st.tuples(st.just("unbind"), st.just(0)),
    st.tuples(st.just("kick"), st.just(0))), min_size=1, max_size=8)


def _route(window: int) -> MemoryRoute:
    return MemoryRoute(ack_window=window) if window else MemoryRoute()


async def _run(rt, ops: list[tuple[str, int]]) -> None:
    session_id = await rt.create_session(channel="web")
    routes: list[MemoryRoute] = []
    tokens = []
    sent: list[str] = []
    acked: set[str] = set()

    def delivered() -> list[str]:
        return [o.delivery_id for route in routes for o in route.delivered
                if o.delivery_id not in acked]

    async def confirm(ids: list[str]) -> None:
        if ids:
            acked.update(await rt.confirm(ids))

    async def rebind(window: int) -> None:
        route = _route(window)
        routes.append(route)
        async with rt.hold_binds(route):
            tokens.append(rt.router.bind(session_id, route))
            await _hand_back(rt, session_id, ("unrouted", "unknown"))

    with trio.fail_after(HANG):
        async with rt.open_turn(session_id, history_policy="transient") as ctx:
            async def send(n: int) -> None:
                for _ in range(n):
                    text = f"m{len(sent)}" * (1 + len(sent) % 3)  # sizes 2 to 9
                    sent.append((await ctx.output.send_text(text)).delivery_id)

            for op, n in ops:
                if op == "send":
                    await send(n)
                elif op == "bind":
                    routes.append(_route(n))
                    tokens.append(rt.router.bind(session_id, routes[-1]))
                elif op == "rebind":
                    await rebind(n)
                elif op == "ack":
                    await confirm(delivered()[:1] if n else delivered())
                elif op == "ack_everything":
                    await confirm(sent)
                elif op == "stalled_ack":
                    for route in routes:
                        route.stall()
                    await send(1)
                    await trio.testing.wait_all_tasks_blocked()
                    await confirm(sent)
                    for route in routes:
                        route.release()
                elif op == "drop":
                    await rt.abandon_unacked(session_id)
                elif op == "unbind" and tokens:
                    rt.router.unbind(tokens.pop())
                elif op == "kick":
                    rt.dispatcher.kick(session_id)
                await trio.testing.wait_all_tasks_blocked()
            await rebind(2)  # a last client: what is unrouted or unknown comes to it
            while True:  # it acks all it gets, as do the earlier ones still bound
                await confirm(delivered())
                statuses = {row.status for row in await rt.stored_deliveries(session_id)}
                if statuses <= {"sent"}:
                    break
                await trio.testing.wait_all_tasks_blocked()
    got = {o.delivery_id for route in routes for o in route.delivered}
    assert got == set(sent), ops  # every row went out (some twice: after a drop)
    lane = rt.dispatcher.lane(session_id)
    if lane is not None:
        assert (len(lane.unacked), lane.unacked_bytes) == (0, 0), ops
        assert (lane.posted, lane.queued_bytes, len(lane.backlog)) == (0, 0, 0), ops
    assert rt.statistics().dispatch.unacked_bytes == 0, ops


async def _budget(rt, lane_bytes: int | None) -> None:
    if lane_bytes is not None:
        rt.dispatcher.lane_bytes = lane_bytes
    await trio.lowlevel.checkpoint()


# The default budget (only the window holds rows back), one that holds about two of these
# texts unacked, and one every text is over (one unacked row at a time).
@pytest.mark.parametrize("lane_bytes", [None, 10, 1])
def test_acked_rows_leave_no_unacked_bytes_behind(db_path, workspace, lane_bytes) -> None:
    with RuntimeThread(db_path, workspace) as thread:
        thread.run(_budget, thread.rt, lane_bytes)

        @settings(max_examples=40, deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow])
        @given(_OPS)
        def check(ops: list[tuple[str, int]]) -> None:
            thread.run(_run, thread.rt, ops)

        check()
