"""Fixtures for the gateway tests: a runtime on a temp database, and a gateway on port 0."""

from __future__ import annotations

import pathlib
from collections.abc import AsyncIterator

import pytest

import tidings
from tidings.actors import Runtime


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
