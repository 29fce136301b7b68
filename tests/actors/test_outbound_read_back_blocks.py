"""A route is handed the same blocks for a delivery whether its lane had it in memory or read
it back from the outbox (after a restart, a backlog, a replay).

A control block's ``data`` is written as its JSON reads back (the SDK keeps no caller's
objects: "what the route gets live is what it gets later"), but a row read back from the
outbox rebuilt its blocks with the nested arrays still as the store's read-only tuples, and the
objects inside those arrays as read-only mappings, while the live send handed lists of dicts:
``{"buttons": [{"id": "yes"}]}`` reached a route as a list live and as a tuple after a restart,
so an adapter that appended a button, or checked ``isinstance(..., list)``, failed (the
delivery ``failed``) only for the rows its lane had read back."""

from __future__ import annotations

import trio

import tidings
from tidings.testing import MemoryRoute

DATA = {"buttons": [{"id": "yes", "tags": ["a", "b"]}, {"id": "no"}], "more": {"rows": [1, 2]}}
BLOCKS = ["Pick one", {"type": "control", "action": "menu", "data": DATA}]


def _route() -> MemoryRoute:
    return MemoryRoute(capabilities={"text", "control"})


async def test_a_control_block_read_back_is_handed_as_it_was_live(
        db_path, workspace, autojump_clock) -> None:
    with trio.fail_after(60):  # hang guard (trio's clock jumps)
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            session_id = await rt.create_session(channel="web")
            live_route = _route()
            rt.router.bind(session_id, live_route)
            async with rt.open_turn(session_id) as ctx:
                sent = await ctx.output.send(BLOCKS, history_text="menu")
            assert await sent.wait() == "delivered"
            [live] = live_route.delivered
            # a replay reads the row back
            replayed = await rt.stored_deliveries(session_id, statuses=("sent",))
            assert replayed[0].outbound.blocks == live.blocks
            # a row left queued at the stop is read back by the next start
            stalled = _route()
            stalled.stall()
            rt.router.bind(session_id, stalled)
            async with rt.open_turn(session_id) as ctx:
                await ctx.output.send_text("in flight at the stop")
                await stalled.wait_attempted(1)
                await ctx.output.send(BLOCKS, history_text="menu")
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        recover="manual") as rt:
            later_route = _route()
            rt.router.bind(session_id, later_route)
            await rt.recover()
            [later] = await later_route.wait_delivered(1)
    assert later.blocks == live.blocks
    buttons = later.blocks[1].data["buttons"]
    assert isinstance(buttons, list)
    assert isinstance(buttons[0], dict)
