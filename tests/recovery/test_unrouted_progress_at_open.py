"""A progress note an earlier process left ``unrouted`` (its session had no route) is ended at
the next start, as a ``queued`` one is: ``failed`` with ``stale_progress``. Nothing else ever
ended it, and no prune deletes an ``unrouted`` row."""

from __future__ import annotations

from typing import Any

import pytest

import tidings
from tidings.store import recovery as store_recovery
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


async def test_an_open_reads_no_unrouted_message_to_find_progress_notes(
        db_path, workspace, monkeypatch) -> None:
    """The ``unrouted`` messages an earlier process left (no prune deletes them, so they grow
    with the database) are not read at every open to find the progress notes among them: the
    open's look-up answers in one page, and reads no row (its key comes back None)."""
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            messages = [await ctx.output.send_text(f"answer {n}") for n in range(30)]
        assert {await message.wait() for message in messages} == {"unrouted"}
    pages: list[tuple[list[str], tuple[str, int] | None]] = []
    read_page = store_recovery.unrouted_progress

    def counted(conn: Any, after: tuple[str, int], limit: int) -> Any:
        page = read_page(conn, after, limit)
        pages.append(page)
        return page

    monkeypatch.setattr(store_recovery, "unrouted_progress", counted)
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        kept = await rt.delivery_status(messages[0].delivery_id)
    assert pages == [([], None)]
    assert kept.outbox_status == "unrouted"
