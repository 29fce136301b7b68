"""A runtime that serves session after session keeps nothing per session, delivery, turn or
question once their lives end: ``tidings serve`` runs for months.

Each cycle is a session's whole life: bound to a route, a turn that sends (delivered, with an
idempotency key), asks (answered, and one left to expire), a send that fails, a turn
cancelled, one cut by its timeout, a held message released by its turn, the route unbound and
a send found no route, and a second session on an acking route, one row acked and one
abandoned. After it, the runtime's own figures (``rt.statistics()``, the lanes' and tasks'
supervisors) are back at their baseline, and the live records of the kinds a cycle makes are
as many after many more cycles as after a few: none grows with the sessions served.
"""

from __future__ import annotations

import trio
import trio.testing

from tidings.actors import TurnContext
from tidings.actors._handle import DeliveryItem
from tidings.actors._lanes import Lane
from tidings.actors._router import Binding
from tidings.testing import MemoryRoute

from .live_records import grown, live_records

_KINDS = (DeliveryItem, TurnContext, Lane, Binding, MemoryRoute, trio.CancelScope, trio.Lock)


async def _life(rt, n: int) -> None:  # type: ignore[no-untyped-def]
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("yes")
    token = rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        sent = await ctx.output.send_text(f"hi {n}", idempotency_key=f"key {n}")
        assert (await ctx.prompt_user("go on?")).text == "yes"
        assert (await ctx.prompt_user("still there?", expires_in=1)).text is None
    assert await sent.wait() == "delivered"
    route.fail = True
    async with rt.open_turn(session_id) as ctx:
        failed = await ctx.output.send_text("refused")
    assert await failed.wait() == "failed"
    route.fail = None
    async with rt.open_turn(session_id) as ctx:
        ctx.cancel("cancel_command")
        await trio.sleep(1)
    with trio.move_on_after(1):
        async with rt.open_turn(session_id, mode="parallel") as ctx:
            await trio.sleep(5)
    held = await rt.hold_inbound(session_id, notice="not answered")
    async with rt.open_turn(session_id, inbound_ids=[held]):
        pass
    assert rt.router.unbind(token)
    async with rt.open_turn(session_id) as ctx:
        nobody = await ctx.output.send_text("nobody")
    assert await nobody.wait() == "unrouted"

    acking_session = await rt.create_session(channel="web")
    client = MemoryRoute(ack_window=4)
    token = rt.router.bind(acking_session, client)
    async with rt.open_turn(acking_session) as ctx:
        acked = await ctx.output.send_text("ack me")
        dropped = await ctx.output.send_text("and me")
    await client.wait_attempted(2)
    await trio.testing.wait_all_tasks_blocked()
    assert await rt.confirm([acked.delivery_id]) == [acked.delivery_id]
    assert await rt.abandon_unacked(acking_session) == [dropped.delivery_id]
    assert rt.router.unbind(token)
    await trio.sleep(3 * rt.dispatcher.linger)  # idle lanes retire after lingering


async def test_a_runtime_keeps_nothing_per_session_it_served(rt, autojump_clock) -> None:
    with trio.fail_after(3600):  # a hang guard (trio's clock jumps), not a wait
        for n in range(3):
            await _life(rt, n)
        baseline = live_records(_KINDS)
        for n in range(3, 6):
            await _life(rt, n)
        after_few = live_records(_KINDS)
        for n in range(6, 16):  # ten more lives: one record kept per life would be ten
            await _life(rt, n)
        after_many = live_records(_KINDS)
    stats = rt.statistics()
    assert (stats.bound_routes, stats.dispatch.lanes, stats.dispatch.running) == (0, 0, 0)
    assert stats.dispatch.delivered == 16 * 2  # the cycles ran as written
    assert rt.dispatcher.supervisor.statistics().children == ()  # no lane child kept
    assert rt.tasks.statistics().running == 0
    assert rt.serial_turns == {}
    assert grown(baseline, after_few) == {}, (baseline, after_few)
    assert grown(after_few, after_many) == {}, (after_few, after_many)
