"""Helpers for the delivery runtime tests (the shared fixtures are in tests/conftest.py)."""

from __future__ import annotations

import pathlib
import sqlite3


def rows(db_path: pathlib.Path, sql: str, *params: object) -> list[tuple]:
    """Read the database directly (what an operator would see), outside the runtime."""
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()
