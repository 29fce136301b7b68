"""Recovery told an earlier process's turns and progress notes from this one's by the clock:
a turn ``running`` that started before this process did (``store.started_at``), a ``queued``
progress note created before it. A restart whose clock is behind the dead process's (a reboot
with the clock set back, a VM restored from a snapshot, NTP stepping it) found neither: the
dead turn stayed ``running`` for good (no terminal state), the stale note was delivered late.
And the other way: a host whose clock stepped back after the open and then called
``rt.recover()`` had its live turn recorded ``failed`` under it.

At open the lock says no other process has the database and this one has begun nothing yet:
every turn still ``running`` and every ``queued`` progress note is an earlier process's,
whatever its time says. That pass is the only one that ends dead turns now."""

from __future__ import annotations

import sqlite3

import pytest
import trio

import tidings
from tidings.errors import RestartIntensityExceeded
from tidings.supervisor import Intensity
from tidings.testing import MemoryRoute

T = 1_900_000_000.0  # the dead process's time; the restart's clock is an hour behind it


class Clock:
    """A settable wall clock: ``clock.now`` seconds."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def turn_states(db_path) -> list[tuple[str, str | None]]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT status, error FROM turns").fetchall()
    finally:
        conn.close()


async def leave_a_running_turn(db_path, workspace) -> None:
    """The writer exceeds its restart intensity while a turn runs (as in test_turn_faults):
    the store closes and the turn stays ``running``, as a kill leaves it."""
    async def escalate_during_a_turn() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace, clock=Clock(T),
                                        intensity=Intensity(max_restarts=0, period=60)) as rt:
            session_id = await rt.create_session(channel="web")
            async with rt.open_turn(session_id):
                assert rt.supervisor.inject_cancel("writer")
                await trio.sleep_forever()

    with pytest.raises(RestartIntensityExceeded):
        await escalate_during_a_turn()
    assert turn_states(db_path) == [("running", None)]


@pytest.mark.parametrize("recover", ["at_open", "manual"])
async def test_a_dead_turn_ends_failed_when_the_restart_s_clock_is_behind(
        db_path, workspace, recover) -> None:
    await leave_a_running_turn(db_path, workspace)
    async with tidings.open_runtime(db_path, workspace=workspace, recover=recover,
                                    clock=Clock(T - 3600)) as rt:
        if recover == "manual":
            await rt.recover()
        report = rt.scanner.statistics().totals
    assert report.dead_turns == 1
    [(status, error)] = turn_states(db_path)
    assert status == "failed"
    assert "stopped before it recorded" in error


async def test_stale_progress_fails_when_the_restart_s_clock_is_behind(db_path,
                                                                      workspace) -> None:
    route = MemoryRoute()
    route.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, grace=0,
                                    clock=Clock(T)) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            await ctx.output.send_text("in flight")
            await route.wait_attempted(1)
            note = await ctx.output.progress("working on it")
    fresh = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    clock=Clock(T - 3600)) as rt:
        rt.router.bind(session_id, fresh)
        report = await rt.recover()
        status = await rt.delivery_status(note.delivery_id)
        await trio.testing.wait_all_tasks_blocked()
        report += rt.scanner.statistics().totals
    assert (status.status, status.last_error) == ("failed", "stale_progress")
    assert report.stale_progress == 1
    assert fresh.texts() == []  # never delivered late


async def test_a_later_recover_leaves_a_live_turn_alone_after_the_clock_stepped_back(
        db_path, workspace) -> None:
    clock = Clock(T)
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    clock=clock) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute())
        clock.now = T - 10  # NTP steps the clock back
        async with rt.open_turn(session_id) as ctx:
            report = await rt.recover()
            await ctx.output.send_text("still here")
        assert report.dead_turns == 0
    assert turn_states(db_path) == [("completed", None)]


async def _progress_after_a_step_back(rt, session_id: str, route: MemoryRoute, clock: Clock,
                                     pass_: str) -> tuple[object, str]:
    """A send held by the stalled *route*, then the wall clock stepped back, a progress note
    queued behind the send, and a recovery pass (``scan`` or ``recover``) run over it; the
    route let go. Returns the pass's report and the note's outcome."""
    async with rt.open_turn(session_id) as ctx:
        await ctx.output.send_text("first")
        await route.wait_attempted(1)
        clock.now = T - 10  # NTP steps the clock back
        note = await ctx.output.progress("working on it")
        report = await (rt.scanner.scan() if pass_ == "scan" else rt.recover())
        route.release()
        with trio.fail_after(60):  # hang guard (mock clock)
            return report, await note.wait()


@pytest.mark.parametrize("pass_", ["scan", "recover"])
async def test_a_live_progress_note_is_not_stale_after_the_clock_stepped_back(
        db_path, workspace, autojump_clock, pass_) -> None:
    # The scan (and a later recover()) failed as stale every queued progress note created
    # before this process's start by the wall clock: an earlier process's note that reconcile
    # or rt.requeue put back to queued. A note this process had just sent, queued behind a
    # slow route, was one once NTP stepped the clock back: failed, never delivered.
    clock = Clock(T)
    route = MemoryRoute()
    route.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    clock=clock, scan_interval=3600) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, route)
        await rt.recover()
        report, outcome = await _progress_after_a_step_back(rt, session_id, route, clock,
                                                            pass_)
    assert report.stale_progress == 0
    assert outcome == "delivered"
    assert route.texts() == ["first", "working on it"]


@pytest.mark.parametrize("pass_", ["scan", "recover"])
async def test_a_live_progress_note_is_not_stale_after_a_prune_and_a_clock_step_back(
        db_path, workspace, autojump_clock, pass_) -> None:
    # Recovery tells a note this process wrote from an earlier process's by its outbox rowid
    # (above the outbox's last one at open: "a row written later has a higher one"). A prune
    # right after the open (serve's retention prunes at start) deleted the rows with the
    # highest rowids, so SQLite gave the next rows the same rowids again: this process's own
    # note, queued behind a slow route, was at or below the mark and, once NTP stepped the
    # clock back, failed as an earlier process's stale progress, never delivered.
    async with tidings.open_runtime(db_path, workspace=workspace, clock=Clock(T - 100)) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute())
        async with rt.open_turn(session_id) as ctx:
            handles = [await ctx.output.send_text(f"old {n}") for n in range(3)]
        with trio.fail_after(60):
            assert [await handle.wait() for handle in handles] == ["delivered"] * 3
    clock = Clock(T)
    route = MemoryRoute()
    route.stall()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    clock=clock, scan_interval=3600) as rt:
        await rt.prune(older_than=0)
        rt.router.bind(session_id, route)
        await rt.recover()
        report, outcome = await _progress_after_a_step_back(rt, session_id, route, clock,
                                                            pass_)
    assert report.stale_progress == 0
    assert outcome == "delivered"
    assert route.texts() == ["first", "working on it"]
