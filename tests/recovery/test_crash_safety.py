"""Kill -9 at a random moment, restart, recover: nothing acknowledged is lost, nothing is sent
twice, and every ``unknown`` row was in flight at the kill (see ``crash_harness.py``)."""

from __future__ import annotations

import importlib.util
import logging
import pathlib

import pytest

_PATH = pathlib.Path(__file__).with_name("crash_harness.py")
_SPEC = importlib.util.spec_from_file_location("tidings_crash_harness", _PATH)
assert _SPEC is not None
assert _SPEC.loader is not None
harness = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(harness)

log = logging.getLogger(__name__)


@pytest.mark.parametrize("writer", ["thread", "process"])
@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_a_kill_at_a_random_moment_loses_nothing_and_sends_nothing_twice(
        tmp_path, seed, writer) -> None:
    result = await harness.run_kill_point(tmp_path, seed, writer=writer)
    log.info("kill point %s", result)
    assert result.acknowledged >= result.kill_after


@pytest.mark.slow
@pytest.mark.parametrize("writer", ["thread", "process"])
@pytest.mark.parametrize("seed", range(100, 160))
async def test_many_kill_points(tmp_path, seed, writer) -> None:
    result = await harness.run_kill_point(tmp_path, seed, sessions=6, max_kill_after=400,
                                          writer=writer)
    log.info("kill point %s", result)
