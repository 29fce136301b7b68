"""``failure_history_text`` replaces the history text when a delivery ends ``failed`` (final),
not when it ends ``unrouted`` or ``unknown``: both may still end ``sent`` (a returning client's
``rt.requeue``, an ack or a reconcile), and a row rewritten to say it failed could not be
written back. Pinned here: the history keeps the text through both, to their ``sent``."""

from __future__ import annotations

import trio

import tidings
from tidings.testing import MemoryRoute

from ..until import until
from .conftest import rows


async def test_an_unrouted_send_keeps_its_text_and_is_delivered_later(
        rt, db_path, autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("the answer", failure_history_text="not sent")
        assert await handle.wait() == "unrouted"
        [row] = await rt.history(session_id)
        assert row.text == "the answer"
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        assert await rt.requeue(session_id, [handle.delivery_id]) == [handle.delivery_id]
        await until(lambda: rows(db_path, "SELECT status FROM outbox WHERE delivery_id = ?",
                                 handle.delivery_id) == [("sent",)])
    assert [outbound.text for outbound in route.delivered] == ["the answer"]
    [row] = await rt.history(session_id)
    assert row.text == "the answer"


async def test_an_unknown_send_keeps_its_text_and_may_be_confirmed(db_path,
                                                                   workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as first:
        session_id = await first.create_session(channel="web")
        route = MemoryRoute()
        route.stall()  # still in deliver() when the runtime stops: sending, then unknown
        first.router.bind(session_id, route)
        async with first.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("the answer", failure_history_text="not sent")
            await route.wait_attempted(1)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert (await rt.delivery_status(handle.delivery_id)).outbox_status == "unknown"
        [row] = await rt.history(session_id)
        assert row.text == "the answer"
        assert await rt.confirm([handle.delivery_id]) == [handle.delivery_id]
        assert (await rt.delivery_status(handle.delivery_id)).outbox_status == "sent"
        [row] = await rt.history(session_id)
        assert row.text == "the answer"
