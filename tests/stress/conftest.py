"""Fixtures for the stress suites: a temp database path and a workspace."""

from __future__ import annotations

import pathlib

import pytest


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    ws = tmp_path / "workspace"
    ws.mkdir()
    return ws


@pytest.fixture
def db_path(tmp_path: pathlib.Path) -> pathlib.Path:
    return tmp_path / "state" / "tidings.db"
