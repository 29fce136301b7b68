"""A turn records exactly one terminal state, even when the writer crashes as it ends."""

from __future__ import annotations

import sqlite3

import pytest
import trio

import tidings
from tidings.errors import RestartIntensityExceeded
from tidings.supervisor import Intensity
from tidings.testing import FaultPlan, FaultRule, Seam


def turn_states(db_path) -> list[tuple[str, str | None]]:
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT status, reason FROM turns").fetchall()
    finally:
        conn.close()


async def one_turn(db_path, workspace, plan: FaultPlan, seam: Seam) -> int:
    """Run one turn; return how often ``seam`` was hit for the writer before it ended."""
    async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id):
            hits = plan.hits("writer", seam)
    return hits


@pytest.mark.parametrize("seam", [Seam.SEND, Seam.BEFORE_MESSAGE])
async def test_a_turn_end_lost_to_a_writer_crash_is_written_again(tmp_path, workspace,
                                                                  seam) -> None:
    hits = await one_turn(tmp_path / "count.db", workspace, FaultPlan(), seam)
    # the next hit is the turn's end
    plan = FaultPlan([FaultRule(seam, child="writer", nth=hits + 1)])
    await one_turn(tmp_path / "run.db", workspace, plan, seam)
    assert [(r.child, r.seam) for r in plan.injected] == [("writer", str(seam))]
    assert turn_states(tmp_path / "run.db") == [("completed", None)]


async def test_turns_a_stopped_process_left_running_end_failed_at_the_next_open(
        db_path, workspace) -> None:
    """The writer exceeds its restart intensity while a turn runs: the store closes and the
    turn's end cannot be written. The next open records it, once."""

    async def escalate_during_a_turn() -> None:
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        intensity=Intensity(max_restarts=0, period=60)) as rt:
            session_id = await rt.create_session(channel="web")
            async with rt.open_turn(session_id):
                assert rt.supervisor.inject_cancel("writer")
                await trio.sleep_forever()

    with pytest.raises(RestartIntensityExceeded):
        await escalate_during_a_turn()
    assert turn_states(db_path) == [("running", None)]
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        report = rt.scanner.statistics().totals
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        again = rt.scanner.statistics().totals
    assert (report.dead_turns, again.dead_turns) == (1, 0)
    assert turn_states(db_path) == [("failed", None)]
