"""``rt.requeue`` of progress notes: an earlier process's is stale, this process's goes again."""

from __future__ import annotations

import trio

import tidings
from tidings.testing import MemoryRoute, database_violations

from ..until import until
from .test_reconcile import progress_cut_in_flight


async def test_an_earlier_process_s_progress_note_handed_back_is_stale_not_sent_late(
        db_path, workspace) -> None:
    # A dead turn's "working on it", cut in its delivery (unknown after the restart), handed
    # back by a channel whose client lacks it (rt.requeue) went to the lane, kicked by that
    # write, and out late, before any scan's stale-progress pass could fail it: the README's
    # table and a reconcile's "missing" end such a note failed (stale_progress), late it is
    # noise. This process's own note, handed back, still goes again.
    session_id, old = await progress_cut_in_flight(db_path, workspace)
    route = MemoryRoute(ack_window=4)
    with trio.fail_after(30):  # hang guard (real time; it takes milliseconds)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=3600) as rt:
            assert (await rt.delivery_status(old.delivery_id)).status == "unknown"
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                own = await ctx.output.progress("still on it")
            await route.wait_delivered(1)
            assert await rt.abandon_unacked(session_id) == [own.delivery_id]  # unknown too

            moved = await rt.requeue(session_id, [old.delivery_id, own.delivery_id])

            async with rt.open_turn(session_id) as ctx:
                await ctx.output.send_text("after the hand-back")
            await until(lambda: "after the hand-back" in route.texts())  # past both notes
            await rt.confirm([outbound.delivery_id for outbound in route.delivered])
            old_status = await rt.delivery_status(old.delivery_id)
    assert route.texts() == ["still on it", "still on it", "after the hand-back"]
    assert (old_status.status, old_status.last_error) == ("failed", "stale_progress")
    assert moved == [own.delivery_id]
    assert database_violations(db_path) == []  # its work item and events agree with it


async def test_an_earlier_process_s_progress_note_already_final_is_left_as_it_is(
        db_path, workspace) -> None:
    # earlier_progress picks the notes an earlier process wrote by rowid, whatever their
    # status: a hand-back of one already sent (acked by its client) or failed (a hand-back
    # before) must not move it, count it as handed back, or go out again.
    session_id, old = await progress_cut_in_flight(db_path, workspace)
    _, other = await progress_cut_in_flight(db_path, workspace)  # (a second earlier process)
    route = MemoryRoute(ack_window=4)
    with trio.fail_after(30):  # hang guard (real time; it takes milliseconds)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=3600) as rt:
            rt.router.bind(session_id, route)
            assert await rt.confirm([old.delivery_id]) == [old.delivery_id]  # sent
            other_session = other.session_id
            rt.router.bind(other_session, route)
            assert await rt.requeue(other_session, [other.delivery_id]) == []  # failed now
            events = [len(await rt.delivery_events(handle.delivery_id))
                      for handle in (old, other)]

            assert await rt.requeue(session_id, [old.delivery_id]) == []
            assert await rt.requeue(other_session, [other.delivery_id]) == []

            async with rt.open_turn(session_id) as ctx:
                await ctx.output.send_text("after the hand-backs")
            await until(lambda: "after the hand-backs" in route.texts())
            await rt.confirm([outbound.delivery_id for outbound in route.delivered])
            statuses = [await rt.delivery_status(handle.delivery_id) for handle in (old, other)]
            assert [len(await rt.delivery_events(handle.delivery_id))
                    for handle in (old, other)] == events  # no move recorded
    assert route.texts() == ["after the hand-backs"]
    assert [status.status for status in statuses] == ["sent", "failed"]
    assert statuses[1].last_error == "stale_progress"
    assert database_violations(db_path) == []
