"""A batch the writer child could not read commits in the host instead; if that fails too
(the host's connection raised), its requests must still be answered, never left waiting."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
import trio

from tidings.store import Execute, InsertRows, _writer, open_store


class _ChildCannotLoad:
    """A value that pickles, but whose unpickling raises in the writer child."""

    def __reduce__(self) -> Any:
        return (int, ("not a number",))


async def _write_unreadable(tmp_path, tell) -> None:
    """Write a batch the child cannot read, until the writer fails."""
    async with open_store(tmp_path / "a.db", writer="process") as store:
        await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v)")])
        store.commit_nowait([InsertRows("kv", ("k", "v"), (("bad", _ChildCannotLoad()),))],
                            on_commit=tell, on_error=tell)
        await trio.sleep_forever()  # until the writer's failure cancels this


async def test_a_fallback_batch_that_fails_in_the_host_is_answered_not_committed(
        tmp_path, monkeypatch) -> None:
    def broken(conn: sqlite3.Connection, requests: object) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(_writer, "execute_batch", broken)  # only the host's fallback uses it
    heard: list[object] = []
    with trio.fail_after(30), pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        await _write_unreadable(tmp_path, heard.append)
    assert len(heard) == 1
    assert "stopped before this write committed" in str(heard[0])
