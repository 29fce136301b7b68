"""A progress note an earlier process left ``unrouted`` (its session had no route) is ended at
the next start, as a ``queued`` one is: ``failed`` with ``stale_progress``. Nothing else ever
ended it, and no prune deletes an ``unrouted`` row."""

from __future__ import annotations

import pytest

import tidings
from tidings.testing import MemoryRoute


@pytest.mark.parametrize("recover", ["at_open", "manual"])
async def test_an_earlier_processs_unrouted_progress_is_failed_at_open(
        db_path, workspace, recover) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            progress = await ctx.output.progress("working on it")
            message = await ctx.output.send_text("the answer")
        assert await progress.wait() == "unrouted"
        assert await message.wait() == "unrouted"
    async with tidings.open_runtime(db_path, workspace=workspace, recover=recover) as rt:
        report = rt.scanner.totals
        ended = await rt.delivery_status(progress.delivery_id)
        kept = await rt.delivery_status(message.delivery_id)
        types = [event.type for event in await rt.delivery_events(progress.delivery_id)]
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        if recover == "manual":
            await rt.recover()
    assert (ended.outbox_status, ended.last_error) == ("failed", "stale_progress")
    assert types[-3:] == ["delivery.unrouted", "delivery.requeued", "delivery.failed"]
    assert report.stale_progress == 1
    assert kept.outbox_status == "unrouted"  # a message is still owed: a hand-back sends it
    assert route.texts() == []
