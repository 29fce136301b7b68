"""Shared pytest configuration and fixtures.

``--slow`` turns on the long forms of the heavy suites. Every suite gets ``workspace`` (an empty
directory a runtime may read files from), ``db_path`` (a database path whose directory does not
exist yet, so the store creates it) and ``rt`` (a runtime on them); a suite's own conftest may
override any of them.
"""

from __future__ import annotations

import faulthandler
import os
import pathlib
from collections.abc import AsyncIterator, Iterator

import pytest
import trio.testing

import tidings
from tidings.actors import Runtime

from .io_clock import io_clock


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


HANG_LIMIT = 600.0
"""Real seconds one test may take before the run is ended with every thread's traceback."""


_STDERR_KEY = pytest.StashKey[int]()


def pytest_configure(config: pytest.Config) -> None:
    # The terminal's stderr, before output capture takes fd 2 over (as pytest's faulthandler
    # plugin keeps it): where the watchdog's tracebacks must go to be seen.
    config.stash[_STDERR_KEY] = os.dup(2)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _STDERR_KEY in config.stash:
        os.close(config.stash[_STDERR_KEY])
        del config.stash[_STDERR_KEY]


def _hang_limit(config: pytest.Config) -> float:
    """:data:`HANG_LIMIT`, or pytest's ``faulthandler_timeout`` when shorter (``-o
    faulthandler_timeout=120`` to hunt a hang): faulthandler has one timer, which pytest arms
    with that option around each test and :func:`hang_watchdog` re-arms, so the option alone
    said nothing during a test."""
    shorter = float(config.getini("faulthandler_timeout") or 0.0)
    return min(HANG_LIMIT, shorter) if shorter > 0 else HANG_LIMIT


@pytest.fixture(autouse=True)
def hang_watchdog(pytestconfig: pytest.Config) -> Iterator[None]:
    """End the whole run, printing where every thread stands, when one test takes longer than
    :data:`HANG_LIMIT` real seconds (the slowest takes seconds; the ``--slow`` forms, a few
    minutes). Tests guard their own waits with ``trio.fail_after``, but a wait left unguarded
    (a ``handle.wait()`` a regression never resolves) hung the run until CI's own limit, with
    nothing said of where. A shorter ``faulthandler_timeout`` is the limit instead."""
    faulthandler.dump_traceback_later(_hang_limit(pytestconfig), exit=True,
                                      file=pytestconfig.stash[_STDERR_KEY])
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


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


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """The clock of the tests that do real I/O (SQLite in worker threads, a writer process,
    pipes): a ``MockClock`` that jumps to the next deadline once the run loop has been idle for
    ``IO_AUTOJUMP_THRESHOLD`` (0.05) real seconds, but not while tidings' own SQLite work is in
    flight: a worker-thread call of a ``tidings`` module, or a batch the writer process holds.

    A plain autojump clock took a task waiting for a slow batch (a loaded machine) for an idle
    one and jumped to the test's hang guard or to a timeout of the code under test. Work still
    in flight after ``STUCK_AFTER`` (5) real seconds no longer holds the clock, so a stuck
    thread still trips the guard. See tests/io_clock.py."""
    return io_clock()


@pytest.fixture
def quick_autojump_clock() -> trio.testing.MockClock:
    """``autojump_clock`` jumping after 5 ms of idle instead of 50 ms, for a test that goes
    through many timers (backoffs, route latencies) and otherwise waits only on its own tasks
    and on tidings' SQLite work: each jump cost it 50 real ms and proved nothing, since the
    clock's guard, not the threshold, keeps a jump from passing that work (tests/io_clock.py).
    Not for a test that waits on another process, a peer's socket or a thread of its own:
    there the threshold is all that keeps the clock from jumping past the wait."""
    return io_clock(threshold=0.005)
