"""A send whose write the writer answers "may or may not have committed" (a writer process
killed between its commit and its answer; here, deterministically, an op of the same batch
that ran ``COMMIT`` itself) and that did commit.

The pipeline dropped such a send as not written. A send into an idle session with a route
bound is written already claimed (``sending``, so that the claim is the last write before the
route is called): nothing in the process ever handed that row to its route, since a lane reads
back ``queued`` rows only. It stayed ``sending`` while the process ran, the session's later
sends went out ahead of it, and the next start made it ``unknown`` (never replayed: "the
platform may have it"), a message no route was ever given. One written ``queued`` (the session
busy) waited for the stranded-row scan (a minute or more) while the later sends went out ahead
of it. Both are now delivered in their place in the session's order: the lane is kicked to
read its queued rows again, a claimed row first sent back to ``queued`` (``unknown`` then
``queued`` in one write, as a claimed row handed back before its platform I/O is).
"""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import StoreError
from tidings.testing import MemoryRoute

from ..uncertain import uncertain_batch


@pytest.mark.parametrize("session", ["idle", "busy"])
async def test_a_send_that_committed_under_an_uncertain_answer_is_delivered_in_order(
        db_path, workspace, session) -> None:
    route = MemoryRoute()
    with trio.fail_after(30):  # hang guard (real time: the writer's thread is held)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=3600) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                texts = ["first", "second"]
                if session == "busy":  # "first" is then written queued, not claimed
                    route.stall()
                    await ctx.output.send_text("zero")
                    await route.wait_attempted(1)
                    texts.insert(0, "zero")

                async def send() -> None:
                    with pytest.raises(StoreError, match="may or may not"):
                        await ctx.output.send_text("first")

                async with trio.open_nursery() as nursery, uncertain_batch(rt) as batch:
                    nursery.start_soon(send)
                    await batch.wait_handed()  # (whatever the send reads comes before)
                    batch.answer_uncertain()
                later = await ctx.output.send_text("second")
            route.release()
            assert await later.wait() == "delivered"  # the last in order
            statuses = [row.status for row in await rt.deliveries(session_id)]
    assert route.texts() == texts
    assert statuses == ["sent"] * len(texts)
