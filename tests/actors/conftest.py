"""Fixtures for the delivery runtime tests: a runtime on a temp database, a workspace."""

from __future__ import annotations

import pathlib
import sqlite3
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


def rows(db_path: pathlib.Path, sql: str, *params: object) -> list[tuple]:
    """Read the database directly (what an operator would see), outside the runtime."""
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()
