"""Reconciling ``unknown`` rows with a route that can ask its platform what it has."""

from __future__ import annotations

import logging
import time

import pytest
import trio
import trio.testing

import tidings
from tidings.actors import DeliveryHandle
from tidings.errors import StoreError
from tidings.supervisor._logging import parse_fields
from tidings.testing import MemoryRoute

from ..io_clock import work_in_flight
from ..uncertain import uncertain_batch
from ..until import POLL


async def _recover_with(db_path, workspace, route, left):
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(left.session_id, route)
        report = await rt.recover()
        status = await rt.delivery_status(left.in_flight)
        events = [e.type for e in await rt.delivery_events(left.in_flight)]
    return report, status, events


async def test_a_row_the_platform_has_becomes_sent_without_being_delivered_again(
        db_path, workspace, leftovers, reconciling_route) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    report, status, events = await _recover_with(db_path, workspace, route, left)
    assert route.asked == [[left.in_flight]]
    assert (report.reconciled_sent, report.requeued, report.undecided) == (1, 0, 0)
    assert (status.status, status.attempts) == ("sent", 1)
    assert events[-2:] == ["delivery.sent", "delivery.reconciled"]
    assert route.attempted == []


async def test_a_row_the_platform_provably_lacks_is_queued_again_and_delivered_in_order(
        db_path, workspace, leftovers, reconciling_route, wait_for_event) -> None:
    left = await leftovers(queued=2, progress=0)
    route = reconciling_route({left.in_flight: "missing"})
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(left.session_id, route)
        report = await rt.recover()
        await wait_for_event(rt, left.queued[-1], "delivery.sent")
        await wait_for_event(rt, left.in_flight, "delivery.sent")
        status = await rt.delivery_status(left.in_flight)
        events = [e.type for e in await rt.delivery_events(left.in_flight)]
    assert (report.requeued, report.queued_sessions) == (1, 1)
    assert route.texts() == ["in flight", "m0", "m1"]  # its old seq puts it first
    assert (status.status, status.attempts) == ("sent", 2)
    assert events == ["delivery.queued", "delivery.sending", "delivery.unknown",
                      "delivery.requeued", "delivery.reconciled", "delivery.sending",
                      "delivery.sent"]


@pytest.mark.parametrize("answer", [None, "maybe", 42, "absent"])
async def test_an_undecided_answer_leaves_the_row_unknown(db_path, workspace, leftovers,
                                                         reconciling_route, answer) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({} if answer == "absent" else {left.in_flight: answer})
    report, status, events = await _recover_with(db_path, workspace, route, left)
    assert route.asked == [[left.in_flight]]
    assert report.undecided == 1
    assert status.status == "unknown"
    assert events[-1] == "delivery.unknown"
    assert route.attempted == []


async def test_a_route_that_cannot_reconcile_is_never_asked_and_the_row_stays_unknown(
        db_path, workspace, leftovers) -> None:
    left = await leftovers(queued=0, progress=0)
    report, status, _ = await _recover_with(db_path, workspace, MemoryRoute(), left)
    assert (report.reconciled_sent, report.requeued, report.undecided) == (0, 0, 0)
    assert status.status == "unknown"


async def test_a_reconcile_that_raises_or_answers_nonsense_changes_nothing_and_is_logged(
        db_path, workspace, leftovers, reconciling_route, caplog) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    route.error = ConnectionError("platform down")
    caplog.set_level(logging.WARNING, logger="tidings.recovery")
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(left.session_id, route)
        failed = await rt.recover()
        still = (await rt.delivery_status(left.in_flight)).status
        route.error = None
        route.answers = ["not", "a", "mapping"]  # type: ignore[assignment]
        nonsense = await rt.scanner.reconcile()
        route.answers = {left.in_flight: "sent"}
        healed = await rt.scanner.reconcile()
        final = (await rt.delivery_status(left.in_flight)).status
    assert (failed.undecided, still) == (1, "unknown")
    assert nonsense.undecided == 1
    assert (healed.reconciled_sent, final) == (1, "sent")
    assert "event=reconcile_failed" in caplog.text
    assert "platform down" in caplog.text
    # Each line reads back as key=value, the error one field (it holds spaces).
    lines = [parse_fields(r.getMessage()) for r in caplog.records
             if r.getMessage().startswith("event=reconcile_")]
    assert lines
    assert None not in lines
    assert any("platform down" in line.get("error", "") for line in lines)


async def test_a_chosen_session_id_is_one_field_of_the_reconcile_lines(
        db_path, workspace, leftovers, reconciling_route, caplog) -> None:
    # A host chooses session ids (any text): one with a space, an "=" and a line break was
    # written bare, so the line read as other fields (a forged event) or as two lines.
    chosen = "ops room\nevent=forged session=other"
    left = await leftovers(queued=0, progress=0, session_id=chosen)
    route = reconciling_route({left.in_flight: "sent"})
    route.error = ConnectionError("platform down")
    caplog.set_level(logging.WARNING, logger="tidings.recovery")
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(chosen, route)
        await rt.recover()

        class Nonsense(reconciling_route):  # type: ignore[misc, valid-type]
            async def reconcile(self, delivery_ids: list[str]) -> object:
                return ["not", "a", "mapping"]

        rt.router.bind(chosen, Nonsense({}))
        await rt.scanner.reconcile()
    messages = [r.getMessage() for r in caplog.records
                if r.getMessage().startswith("event=reconcile_")]
    assert not any("\n" in message for message in messages)
    lines = [parse_fields(message) for message in messages]
    assert {line["event"] for line in lines} == {"reconcile_failed", "reconcile_bad_answer"}
    assert {line["session"] for line in lines} == {chosen}


async def test_a_reconcile_that_hangs_times_out_and_leaves_the_row_unknown(
        db_path, workspace, leftovers, reconciling_route, quick_autojump_clock) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    route.hang = True
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.scanner.reconcile_timeout = 5.0
        rt.router.bind(left.session_id, route)
        report = await rt.recover()
        status = await rt.delivery_status(left.in_flight)
    assert report.undecided == 1
    assert status.status == "unknown"


async def test_binding_a_reconciling_route_after_recovery_reconciles_at_once(
        db_path, workspace, leftovers, reconciling_route, wait_for_event) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    async with tidings.open_runtime(db_path, workspace=workspace, scan_interval=3600) as rt:
        rt.router.bind(left.session_id, route)  # long after the at-open recovery
        await wait_for_event(rt, left.in_flight, "delivery.reconciled")
        status = await rt.delivery_status(left.in_flight)
    assert rt.scanner.scans == 0  # it was the bind, not the period
    assert status.status == "sent"


async def test_a_requeued_row_reaches_a_lane_that_had_already_passed_its_seq(
        db_path, workspace, leftovers, reconciling_route, wait_for_event) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route()
    with trio.fail_after(30):  # a guard against hanging (real time; it takes milliseconds)
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            rt.router.bind(left.session_id, route)
            await route.wait_asked(1)  # undecided for now
            async with rt.open_turn(left.session_id) as ctx:
                await ctx.output.send_text("m2")
                await ctx.output.send_text("m3")
                await route.wait_delivered(2)
                route.stall()
                await ctx.output.send_text("m4")
                await route.wait_attempted(3)  # the lane is busy, past seq 1
            route.answers[left.in_flight] = "missing"
            report = await rt.scanner.reconcile([left.session_id])
            route.release()
            await wait_for_event(rt, left.in_flight, "delivery.sent")
    assert report.requeued == 1
    assert route.texts() == ["m2", "m3", "m4", "in flight"]


async def test_reconciling_twice_records_each_event_once(db_path, workspace, leftovers,
                                                        reconciling_route, events_in) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        rt.router.bind(left.session_id, route)
        first = await rt.recover()
        second = await rt.scanner.reconcile()
    assert (first.reconciled_sent, second.reconciled_sent) == (1, 0)
    assert len(route.asked) == 1  # a sent row is not asked about again
    counts = events_in(db_path)
    assert counts[(left.in_flight, "delivery.sent")] == 1
    assert counts[(left.in_flight, "delivery.reconciled")] == 1


async def test_a_platform_that_does_not_answer_costs_a_pass_one_timeout_not_one_per_session(
        db_path, workspace, leftovers, reconciling_route, quick_autojump_clock) -> None:
    # Each session's reconcile was asked in turn, so a hanging platform held recovery (and
    # the queued rows, handed on after it) reconcile_timeout (30 s) per session: with 20
    # sessions, ten minutes before anything queued moved.
    lefts = [await leftovers(queued=0, progress=0) for _ in range(19)]
    lefts.append(await leftovers(queued=1, progress=0))
    route = reconciling_route()
    route.hang = True
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
        for left in lefts:
            rt.router.bind(left.session_id, route)
        start = trio.current_time()
        report = await rt.recover()
        took = trio.current_time() - start
        [queued] = await route.wait_delivered(1)
    assert sorted(len(ids) for ids in route.asked) == [1] * 20  # each session asked once
    assert (report.undecided, report.queued_sessions) == (20, 1)
    assert took == pytest.approx(2 * 30.0)  # 16 sessions at a time: two timeouts in all
    assert queued.text == "m0"


async def test_a_platform_that_does_not_answer_is_not_asked_the_sessions_next_pages(
        db_path, workspace, reconciling_route, quick_autojump_clock) -> None:
    # A session with more unknown rows than a page (a client gone with many unacked rows,
    # several times over) was asked page after page, each ask waiting reconcile_timeout for
    # a platform that had not answered the first: 3 pages, 90 s of a pass holding the lock
    # (and, in recover(), the queued rows of every session) where the README says one
    # timeout per 16 sessions. The rest stays unknown, asked again on the next pass.
    route = reconciling_route(ack_window=5)
    async with tidings.open_runtime(db_path, workspace=workspace, scan_interval=3600) as rt:
        session_id, unknown = await five_unknown_in_pages_of_two(rt, route)
        route.hang = True
        start = trio.current_time()
        report = await rt.scanner.reconcile([session_id])
        took = trio.current_time() - start
        statuses = [(await rt.delivery_status(i)).status for i in unknown]
    assert route.asked == [unknown[:2]]  # the first page only
    assert took == pytest.approx(30.0)
    assert report.undecided == 2
    assert statuses == ["unknown"] * 5


async def five_unknown_in_pages_of_two(rt, route) -> tuple[str, list[str]]:
    """A session whose acking *route* took five rows and acked none, its client then gone
    (``abandon_unacked``): five ``unknown`` rows, two to a reconcile page. Returns the session
    id and the rows' ids, in order."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        for i in range(5):
            await ctx.output.send_text(f"m{i}")
    await route.wait_delivered(5)
    unknown = await rt.abandon_unacked(session_id)
    rt.scanner.batch = 2
    return session_id, unknown


async def progress_cut_in_flight(db_path, workspace) -> tuple[str, DeliveryHandle]:
    """A process that stopped (grace 0) while its route was delivering a turn's progress note
    "working on it": the note's row stays ``sending`` (``unknown`` at the next start). Returns
    the session id and the note's handle."""
    first = MemoryRoute()
    first.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, first)
        async with rt.open_turn(session_id) as ctx:
            note = await ctx.output.progress("working on it")
            await first.wait_attempted(1)
    return session_id, note


async def test_an_earlier_process_s_progress_note_the_platform_lacks_is_stale_not_sent_late(
        db_path, workspace, reconciling_route) -> None:
    # A dead turn's "working on it", cut in its delivery, came back from reconcile's
    # "missing" as queued, and its lane (kicked by that write) sent it late: the scan's
    # stale-progress pass that is there for such a note ran before the reconcile (and would
    # have found it gone anyway). A late progress note is noise (the README's table).
    session_id, note = await progress_cut_in_flight(db_path, workspace)
    route = reconciling_route({note.delivery_id: "missing"})
    with trio.fail_after(30):  # hang guard (real time; it takes milliseconds)
        async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                        scan_interval=3600) as rt:
            rt.router.bind(session_id, route)
            report = await rt.recover()
            async with rt.open_turn(session_id) as ctx:
                after = await ctx.output.send_text("after the restart")
            assert await after.wait() == "delivered"  # its lane went past the note's seq
            status = await rt.delivery_status(note.delivery_id)
    assert route.texts() == ["after the restart"]
    assert (status.status, status.last_error) == ("failed", "stale_progress")
    assert (report.requeued, report.stale_progress) == (0, 1)


async def _settled() -> None:
    """Return once every task waits and none on tidings' SQLite work (``work_in_flight``): a
    task waiting for a worker thread counts as blocked to ``wait_all_tasks_blocked``."""
    await trio.testing.wait_all_tasks_blocked()
    while work_in_flight():
        await trio.sleep(POLL)
        await trio.testing.wait_all_tasks_blocked()


async def test_a_missing_answer_about_an_attempt_since_delivered_again_is_not_applied(
        db_path, workspace, reconciling_route) -> None:
    # The platform was asked about a row's first attempt; while it looked, the channel
    # handed the row back (rt.requeue: its client lacked it), it went out again and its
    # client left before acking (unknown again). The answer "missing" was about the first
    # attempt, not the second, which the platform may have: applied, the row went out a
    # third time. It is undecided now (logged); the next pass asks about the row as it is.
    route = reconciling_route(ack_window=2)
    with trio.fail_after(30):  # hang guard (real time; it takes milliseconds)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=3600) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            # The bind wakes the scanner to reconcile the session (nothing is unknown yet).
            # On a loaded machine that reconcile ran late, after the row below was unknown:
            # it, not the test's, was the one asked first, and the test's, asked after the
            # second attempt, rightly applied "missing" (a flaky (1, 0) below).
            await _settled()
            async with rt.open_turn(session_id) as ctx:
                row = (await ctx.output.send_text("once")).delivery_id
            await route.wait_delivered(1)
            assert await rt.abandon_unacked(session_id) == [row]
            route.answers[row] = "missing"
            route.hold()
            async with trio.open_nursery() as nursery:
                reports = []

                async def reconcile() -> None:
                    reports.append(await rt.scanner.reconcile([session_id]))

                nursery.start_soon(reconcile)
                await route.wait_asked(1)
                assert await rt.requeue(session_id, [row]) == [row]
                await route.wait_delivered(2)
                assert await rt.abandon_unacked(session_id) == [row]
                route.let_answer()
            status = await rt.delivery_status(row)
    assert (reports[0].requeued, reports[0].undecided) == (0, 1)
    assert (status.status, status.attempts) == ("unknown", 2)
    assert route.texts() == ["once", "once"]


async def test_this_process_s_progress_note_the_platform_lacks_is_sent_again_after_a_prune(
        db_path, workspace, reconciling_route) -> None:
    # Reconcile tells an earlier process's progress note (failed as stale when "missing")
    # from this one's by its outbox rowid: at or below the outbox's last one at open. A
    # prune after the open (serve's retention prunes at start) that deleted the newest rows
    # had SQLite give their rowids out again, so a note this process had just sent, which
    # its client left unacked and its platform lacks, was failed as stale, never delivered.
    async with tidings.open_runtime(db_path, workspace=workspace,
                                    clock=lambda: time.time() - 100) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute())
        async with rt.open_turn(session_id) as ctx:
            handles = [await ctx.output.send_text(f"old {n}") for n in range(3)]
        assert [await handle.wait() for handle in handles] == ["delivered"] * 3
    route = reconciling_route(ack_window=2)
    with trio.fail_after(30):  # hang guard (real time; it takes milliseconds)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=3600) as rt:
            assert (await rt.prune(older_than=0)).deliveries == 3
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                note = await ctx.output.progress("working on it")
            await route.wait_delivered(1)
            assert await rt.abandon_unacked(session_id) == [note.delivery_id]
            route.answers[note.delivery_id] = "missing"
            report = await rt.scanner.reconcile([session_id])
            assert (report.requeued, report.stale_progress) == (1, 0)
            await route.wait_delivered(2)
            status = await rt.delivery_status(note.delivery_id)
    assert route.texts() == ["working on it"] * 2
    assert (status.status, status.attempts) == ("sending", 2)


async def test_a_row_requeued_by_a_write_answered_uncertain_goes_out_in_its_place(
        db_path, workspace, reconciling_route) -> None:
    # The reconcile's write kicks the session's lane when it commits (on_commit), so that the
    # lane reads the re-queued row back in its old place. A write the writer answered "may or
    # may not have committed" (a writer process killed between its commit and its answer;
    # here an op of the same batch that ran COMMIT itself) that did commit kicked nothing:
    # the row sat queued until a stranded-row scan, and the session's next send went out
    # ahead of it. Such an answer kicks the lane too (for a write that did not commit, the
    # lane finds nothing new).
    route = reconciling_route(ack_window=5)
    with trio.fail_after(30):  # hang guard (real time: the writer's thread is held)
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=3600) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            await _settled()  # the bind's own reconcile is over (see above)
            async with rt.open_turn(session_id) as ctx:
                row = (await ctx.output.send_text("first")).delivery_id
            await route.wait_delivered(1)
            assert await rt.abandon_unacked(session_id) == [row]
            route.answers[row] = "missing"
            route.hold()

            async def reconcile() -> None:
                with pytest.raises(StoreError, match="may or may not"):
                    await rt.scanner.reconcile([session_id])

            async with trio.open_nursery() as nursery:
                nursery.start_soon(reconcile)
                await route.wait_asked(1)
                async with uncertain_batch(rt) as batch:
                    route.let_answer()
                    await batch.wait_handed()  # (reads of its own come before its write)
                    batch.answer_uncertain()
            async with rt.open_turn(session_id) as ctx:
                await ctx.output.send_text("later")
            await route.wait_delivered(2)
            assert route.texts()[:2] == ["first", "first"]  # the re-queued row, in its place
            await route.wait_delivered(3)
    assert route.texts() == ["first", "first", "later"]
