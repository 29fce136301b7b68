"""`tidings serve` serves with the garbage collector set for a long-lived server (the start-up
heap frozen, a larger first generation) and sets the thresholds back however serving ends
(its ``main`` may run inside another process: these tests, a host)."""

from __future__ import annotations

import gc
import types

import pytest

from tidings.errors import ConfigError
from tidings.supervisor import _cli_serve
from tidings.supervisor._collector import GEN0_THRESHOLD, tune_for_serving
from tidings.supervisor._serve import ServeFailed
from tidings.supervisor.cli import main


@pytest.fixture
def thresholds():
    before = gc.get_threshold()
    yield before
    gc.set_threshold(*before)


@pytest.mark.parametrize(("ending", "code"), [
    (None, 0),
    (ConfigError("serve.workspace", "is not a directory"), 2),
    (ServeFailed("could not listen"), 1),
])
def test_serve_runs_with_the_collector_tuned_and_sets_it_back(tmp_path, monkeypatch, thresholds,
                                                              ending, code) -> None:
    seen = {}

    def run(entry, config) -> None:  # in place of trio.run: what serving would run under
        seen["threshold"] = gc.get_threshold()
        seen["frozen"] = gc.get_freeze_count()
        if ending is not None:
            raise ending

    monkeypatch.setattr(_cli_serve, "trio", types.SimpleNamespace(run=run))
    gc.set_threshold(700, 11, 12)  # not CPython's defaults: the later two must be kept
    assert main(["serve", "--port", "0", "--db", str(tmp_path / "t.db")]) == code
    assert seen["threshold"] == (GEN0_THRESHOLD, 11, 12)
    assert seen["frozen"] > 0
    assert gc.get_threshold() == (700, 11, 12)


def test_tune_for_serving_returns_what_it_replaced(thresholds) -> None:
    gc.set_threshold(123, 4, 5)
    assert tune_for_serving() == (123, 4, 5)
    assert gc.get_threshold() == (GEN0_THRESHOLD, 4, 5)
    assert GEN0_THRESHOLD > 700  # larger than CPython's default, or it tunes nothing
