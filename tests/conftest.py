"""Shared pytest configuration and fixtures.

``--slow`` turns on the long forms of the heavy suites. Every suite gets ``workspace`` (an empty
directory a runtime may read files from), ``db_path`` (a database path whose directory does not
exist yet, so the store creates it) and ``rt`` (a runtime on them); a suite's own conftest may
override any of them.
"""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator

import pytest

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
