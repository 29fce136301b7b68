"""The sweep checks the lanes too (``check_lanes``), as the README says it checks every
invariant: a lane left holding bytes after its path ended is a violation of the run."""

from __future__ import annotations

import pytest

from tidings.actors import _lane_actor
from tidings.testing import delivery_path_run, sweep_delivery_path


@pytest.fixture
def leaky_lanes(monkeypatch):
    """A lane bookkeeping defect: taking a posted delivery forgets its bytes, so the lane
    ends its path holding ``queued_bytes`` (which would hold its later rows back)."""
    taken = _lane_actor._taken

    def leaky(lane, message):
        before = lane.queued_bytes
        message = taken(lane, message)
        lane.queued_bytes = before
        return message

    monkeypatch.setattr(_lane_actor, "_taken", leaky)


def _lane_violations(run) -> list[str]:
    return [str(violation) for violation in run.violations if violation.invariant == "lane"]


async def test_a_path_run_reports_a_lane_left_holding_bytes(tmp_path, workspace,
                                                           leaky_lanes) -> None:
    run = await delivery_path_run(tmp_path / "one.db", workspace)
    assert run.outcomes == ("delivered",) * 3
    assert any("queued_bytes=" in text for text in _lane_violations(run)), run.violations


async def test_a_sweep_reports_a_lane_left_holding_bytes(tmp_path, workspace,
                                                         leaky_lanes) -> None:
    [clean] = await sweep_delivery_path(tmp_path, workspace, target="writer", every=10**6)
    assert _lane_violations(clean), clean.violations


async def test_a_clean_path_run_leaves_its_lanes_empty(tmp_path, workspace) -> None:
    run = await delivery_path_run(tmp_path / "one.db", workspace)
    assert run.violations == (), [str(v) for v in run.violations]
