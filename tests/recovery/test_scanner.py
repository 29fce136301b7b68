"""The recovery scanner as a supervised actor: its period, stranded rows, its restarts."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import tidings
from tidings.errors import ValidationError
from tidings.supervisor import FaultPlan, FaultRule, Seam
from tidings.testing import MemoryRoute

from ..real_time import fail_after_real


async def test_the_scanner_is_a_child_of_the_runtime_supervisor(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        children = [child.name for child in rt.statistics().supervisor.children]
    assert "recovery" in children


async def test_a_stranded_queued_row_is_kicked_on_the_next_scan(db_path, workspace, stranded,
                                                                wait_for_event,
                                                                mock_clock) -> None:
    with fail_after_real(60):  # hang guard: mock_clock moves only at jump()
        route = MemoryRoute()
        async with tidings.open_runtime(db_path, workspace=workspace, scan_interval=10.0,
                                        stranded_after=0.0) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            delivery_id = await stranded(rt, session_id, "lost")
            await trio.testing.wait_all_tasks_blocked()
            assert route.delivered == []  # nobody scheduled it
            assert rt.scanner.scans == 0
            mock_clock.jump(10.0)
            report = await rt.scanner.wait_scan()
            await wait_for_event(rt, delivery_id, "delivery.sent")
            status = await rt.delivery_status(delivery_id)
        assert report.stranded_sessions == 1
        assert route.texts() == ["lost"]
        assert status.status == "sent"


async def test_a_queued_row_younger_than_stranded_after_is_left_to_its_lane(
        db_path, workspace, stranded) -> None:
    now = [1_000.0]
    async with tidings.open_runtime(db_path, workspace=workspace, stranded_after=60.0,
                                    clock=lambda: now[0]) as rt:
        session_id = await rt.create_session(channel="web")
        await stranded(rt, session_id, "young")
        now[0] += 59.0
        young = await rt.scanner.scan()
        now[0] += 2.0
        old = await rt.scanner.scan()
    assert (young.stranded_sessions, old.stranded_sessions) == (0, 1)


@pytest.mark.parametrize("stranded_after", [60.0, 0.0])
async def test_a_queued_row_exactly_stranded_after_old_is_kicked(
        db_path, workspace, stranded, stranded_after) -> None:
    """A first ``queued`` row that has waited ``stranded_after`` seconds, no more, is
    stranded: ``stranded_after=0`` kicks every queued row, one written at the scan's own
    instant too."""
    now = [1_000.0]
    async with tidings.open_runtime(db_path, workspace=workspace,
                                    stranded_after=stranded_after,
                                    clock=lambda: now[0]) as rt:
        session_id = await rt.create_session(channel="web")
        await stranded(rt, session_id, "due")
        now[0] += stranded_after
        report = await rt.scanner.scan()
    assert report.stranded_sessions == 1


async def test_no_scan_runs_before_a_manual_recover(db_path, workspace, leftovers,
                                                    mock_clock) -> None:
    with fail_after_real(60):  # hang guard: mock_clock moves only at jump()
        left = await leftovers(queued=1, progress=0)
        async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                        scan_interval=5.0, stranded_after=0.0) as rt:
            mock_clock.jump(60.0)
            await trio.testing.wait_all_tasks_blocked()
            assert rt.scanner.scans == 0
            assert (await rt.delivery_status(left.queued[0])).status == "queued"
            route = MemoryRoute()
            rt.router.bind(left.session_id, route)
            await rt.recover()
            await route.wait_delivered(1)
            mock_clock.jump(5.0)
            await rt.scanner.wait_scan()
        assert route.texts() == ["m0"]
        stats = rt.scanner.statistics()
        assert (stats.armed, stats.scans) == (True, 1)
        assert stats.totals.queued_sessions == 1


async def test_a_crashed_scanner_is_restarted_and_keeps_its_state(db_path, workspace,
                                                                 stranded,
                                                                 mock_clock) -> None:
    with fail_after_real(60):  # hang guard: mock_clock moves only at jump()
        plan = FaultPlan([FaultRule(Seam.BEFORE_MESSAGE, child="recovery", nth=1)])
        route = MemoryRoute()
        async with tidings.open_runtime(db_path, workspace=workspace, fault_plan=plan,
                                        scan_interval=10.0, stranded_after=0.0) as rt:
            # recovery at open pokes the scanner; handling that poke crashes it once
            await trio.testing.wait_all_tasks_blocked()
            mock_clock.jump(1.0)  # its restart's backoff (0.5 s, jittered)
            await trio.testing.wait_all_tasks_blocked()
            restarts = [r for r in rt.supervisor.restart_log if r.child == "recovery"]
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            await stranded(rt, session_id, "after the crash")
            mock_clock.jump(10.0)
            await rt.scanner.wait_scan()
            await route.wait_delivered(1)
        assert [r.action for r in restarts] == ["restart"]
        assert rt.scanner.armed
        assert route.texts() == ["after the crash"]


@pytest.mark.parametrize(("field", "value"), [("scan_interval", 0), ("scan_interval", -1.0),
                                              ("stranded_after", -5), ("scan_interval", "10")])
async def test_bad_scanner_settings_are_refused_naming_the_field(db_path, workspace, field,
                                                                 value) -> None:
    with pytest.raises(ValidationError) as caught:
        async with tidings.open_runtime(db_path, workspace=workspace, **{field: value}):
            pass
    assert caught.value.field == field
