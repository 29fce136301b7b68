"""Systematic sweep: for one delivery path, a cancel at every scheduler step of an actor in turn.

A counting run finds how many steps the actor takes on the path; then one run per step injects
a cancel there (CheckpointInjector) and every invariant must hold: each delivery ends
(delivered, failed or unknown — never hanging), nothing is duplicated or reordered, the outbox
ends terminal, and each injected cancel shows up as a restart. ``--slow`` sweeps every step of
the writer and a longer path.
"""

from __future__ import annotations

import pytest

from tidings.testing import sweep_delivery_path

TERMINAL = {"delivered", "failed", "unknown"}


def check(runs) -> None:
    clean, *swept = runs
    assert clean.outcomes == ("delivered",) * len(clean.outcomes)
    assert clean.steps > 0
    for run in runs:
        assert run.violations == (), (run.at, [str(v) for v in run.violations])
        assert set(run.outcomes) <= TERMINAL, (run.at, run.outcomes)
    assert sum(bool(run.injected) for run in swept) >= len(swept) // 2


@pytest.mark.parametrize(("target", "every"), [("recovery", 1), ("writer", 3)])
async def test_a_cancel_at_any_step_of_an_actor_breaks_no_invariant(tmp_path, workspace,
                                                                    target: str,
                                                                    every: int) -> None:
    runs = await sweep_delivery_path(tmp_path, workspace, target=target, every=every)
    check(runs)
    assert len(runs) == 1 + runs[0].steps // every


async def test_the_lane_sweep_reaches_the_claimed_and_the_queued_rows(tmp_path,
                                                                      workspace) -> None:
    runs = await sweep_delivery_path(tmp_path, workspace, target="route:*")
    check(runs)
    assert len(runs) == 1 + runs[0].steps
    outcomes = {run.outcomes for run in runs[1:]}
    # a cancel lands while the first (claimed as written) row is delivered, and while a
    # queued one is: both become unknown, the others are delivered in order
    assert ("unknown", "delivered", "delivered") in outcomes
    assert ("delivered", "unknown", "delivered") in outcomes


@pytest.mark.slow
@pytest.mark.parametrize("target", ["route:*", "writer", "recovery"])
async def test_long_sweep_of_every_step(tmp_path, workspace, target: str) -> None:
    check(await sweep_delivery_path(tmp_path, workspace, target=target, messages=6))
