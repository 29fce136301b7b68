"""``rt.requeue`` (a reconciling channel handing rows its client lacks back to the lane) kicks
the session's lane when its write commits, so the lane reads the re-queued rows back in their
old place. A write the writer answered "may or may not have committed" (a writer process
killed between its commit and its answer) that did commit kicked nothing: the row sat
``queued`` until a stranded-row scan, and the session's next send went out ahead of it. Such
an answer kicks the lane too (for a write that did not commit, the lane finds nothing new)."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import StoreError
from tidings.testing import MemoryRoute

from ..uncertain import uncertain_batch


async def test_a_row_requeued_by_a_write_answered_uncertain_goes_out_in_its_place(
        db_path, workspace) -> None:
    route = MemoryRoute(ack_window=5)
    with trio.fail_after(30):  # hang guard (real time: the writer's thread is held)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=3600) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                row = (await ctx.output.send_text("first")).delivery_id
            await route.wait_delivered(1)
            assert await rt.abandon_unacked(session_id) == [row]  # unknown now

            async def requeue() -> None:
                with pytest.raises(StoreError, match="may or may not"):
                    await rt.requeue(session_id, [row])

            async with trio.open_nursery() as nursery, uncertain_batch(rt) as batch:
                nursery.start_soon(requeue)
                await batch.wait_handed()  # (the requeue's reads come before its write)
                batch.answer_uncertain()
            async with rt.open_turn(session_id) as ctx:
                await ctx.output.send_text("later")
            await route.wait_delivered(2)
            assert route.texts()[:2] == ["first", "first"]  # the re-queued row, in its place
            await route.wait_delivered(3)
    assert route.texts() == ["first", "first", "later"]
