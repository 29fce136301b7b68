"""A claimed row the lane is handing to a newly bound route, its platform I/O not begun, when
the store refuses the lane's write there: it goes back in line (``queued``) and is delivered
once, as a row whose claim the store refused does (test_lane_store_refusals.py).

Before, the lane's wait-and-settle took it for a row a crashed incarnation was delivering and
recorded it ``unknown``: its sender was told the platform may have it, though no route's
deliver() was ever called with it, and nothing delivered it.
"""

from __future__ import annotations

import logging
import sqlite3

import trio
import trio.testing

from tidings.store import Call
from tidings.testing import writer_gate

from ..until import until
from .conftest import rows
from .test_rebind_degraded import CHART, HANG, ImageRoute, TextOnlyRoute


def _disk_said_no() -> None:
    raise sqlite3.OperationalError("database or disk is full")


def refuse_degraded(conn: sqlite3.Connection) -> None:
    """The writer's connection refuses every ``delivery.degraded`` event (a StoreError, as a
    full disk is: not a conflict)."""
    conn.create_function("tidings_test_refuse", 0, _disk_said_no)
    conn.execute("CREATE TEMP TRIGGER refuse_degraded BEFORE INSERT ON events "
                 "WHEN NEW.type = 'delivery.degraded' "
                 "BEGIN SELECT tidings_test_refuse(); END")


def allow_degraded(conn: sqlite3.Connection) -> None:
    conn.execute("DROP TRIGGER temp.refuse_degraded")


async def _waiting_out_a_refusal(rt, session_id: str) -> None:
    """Return once *session_id*'s lane waits out a write the store refused (the writer works
    in a thread, which ``wait_all_tasks_blocked`` does not wait for)."""
    def waiting() -> bool:
        lane = rt.dispatcher.lane(session_id)
        return lane is not None and lane.holding is not None

    await until(waiting)


async def test_a_claimed_row_whose_hand_over_the_store_refuses_goes_back_and_out_once(
        rt, db_path, caplog) -> None:
    """Claimed for a route that renders images, re-bound while the claim was written to a
    text-only one: the lane writes a ``delivery.degraded`` event naming that route before it
    hands the row over, and the store refuses it. The row was never on any platform."""
    caplog.set_level(logging.WARNING, logger="tidings.dispatch")
    session_id = await rt.create_session(channel="web")
    old, new = ImageRoute(), TextOnlyRoute()
    old.stall()
    rt.router.bind(session_id, old)
    await rt.store.commit([Call(refuse_degraded)])
    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("first")
            await old.wait_attempted(1)  # the lane is inside deliver(first)
            image = await ctx.output.send_image(CHART, caption="chart",
                                                history_policy="transient")
            async with writer_gate(rt.store) as gate:
                old.release()  # first's sent and the image's claim queue behind the gate
                await trio.testing.wait_all_tasks_blocked()
                rt.router.bind(session_id, new)
                gate.release()
            await _waiting_out_a_refusal(rt, session_id)
            await rt.store.commit([Call(allow_degraded)])
            assert await first.wait() == "delivered"
            assert await image.wait() == "delivered"
    assert [outbound.text for outbound in old.attempted] == ["first"]
    assert [outbound.text for outbound in new.delivered] == ["chart"]
    refusals = [r.getMessage() for r in caplog.records
                if r.getMessage().startswith("event=lane_store_error")]
    assert refusals  # the store did refuse a write of the lane's
    assert rows(db_path, "SELECT status FROM outbox WHERE delivery_id = ?",
                image.delivery_id) == [("sent",)]
