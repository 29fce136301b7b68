"""A second ``open_runtime`` on a database a runtime has open raises
``tidings.errors.DatabaseInUseError``: the one exception module names it, so a host that waits
for the other runtime (or tells its user) catches it by name instead of matching the message
of a ``StoreError``, as ``tidings prune`` tells it from a lock it cannot take."""

from __future__ import annotations

import pytest

import tidings
from tidings.errors import DatabaseInUseError, StoreError


async def test_a_second_runtime_on_one_database_raises_database_in_use(tmp_path,
                                                                      workspace) -> None:
    db = tmp_path / "tidings.db"
    async with tidings.open_runtime(db, workspace=workspace):
        with pytest.raises(DatabaseInUseError, match="already open in another runtime") as info:
            async with tidings.open_runtime(db, workspace=workspace):
                pass  # pragma: no cover (the open is refused)
    assert isinstance(info.value, StoreError)
    assert info.value.holder == "runtime"
