"""Shared pytest configuration and fixtures.

``--slow`` turns on the long forms of the heavy suites. Every suite gets ``workspace`` (an empty
directory a runtime may read files from), ``db_path`` (a database path whose directory does not
exist yet, so the store creates it) and ``rt`` (a runtime on them); a suite's own conftest may
override any of them.
"""

from __future__ import annotations

import os
import pathlib
from collections.abc import AsyncIterator, Iterator

import pytest
import trio.testing

import tidings
from tidings.actors import Runtime


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", default=False,
                     help="run the long forms of the crash, fault and load suites")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="long form: run with --slow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session", autouse=True)
def subprocess_bytecode_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Let the Python subprocesses the tests start (``tidings serve``, the writer process,
    crash-harness children, ``--help`` runs) share compiled bytecode.

    With ``PYTHONDONTWRITEBYTECODE`` set (as on the machines these tests run on), every such
    process compiled all of tidings from source again, about a quarter of its start-up. The
    cache goes to a directory of this session (``PYTHONPYCACHEPREFIX``), never next to the
    sources, and the pytest process itself is unaffected (it read the flag when it started)."""
    names = ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")
    saved = {name: os.environ.get(name) for name in names}
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp_path_factory.mktemp("pycache"))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def db_path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "state" / "tidings.db"


@pytest.fixture
async def rt(db_path: pathlib.Path, workspace: pathlib.Path) -> AsyncIterator[Runtime]:
    async with tidings.open_runtime(db_path, workspace=workspace) as runtime:
        yield runtime


IO_AUTOJUMP_THRESHOLD = 0.05
"""Real seconds the run loop must sit idle before the autojump clock jumps, for tests that do
real I/O (SQLite in worker threads, a writer process, pipes).

With trio's default of 0 for ``autojump_clock``, time jumps whenever every task is blocked —
also while a write is in flight in a thread — and, with no timer pending, the loop spins at
full speed polling for that thread, taking the CPU (and the GIL) from it. trio's advice for
tests with I/O in flight is the smallest threshold that avoids such false alarms."""


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=IO_AUTOJUMP_THRESHOLD)
