"""Bad arguments to ``open_store`` / ``prepare_store`` are refused by name, before anything is
created: no database file, no directory, no process epoch registered."""

from __future__ import annotations

import pytest

from tidings.errors import ValidationError
from tidings.store import open_store, prepare_store, read_database, status_report

BAD = [
    ({"synchronous": "OFF"}, "synchronous"),
    ({"readers": 0}, "readers"),
    ({"readers": "4"}, "readers"),
    ({"readers": True}, "readers"),
    ({"readers": 2.0}, "readers"),
    ({"max_batch": 0}, "max_batch"),
    ({"max_batch": None}, "max_batch"),
]


@pytest.mark.parametrize(("kwargs", "field"), BAD)
async def test_prepare_store_refuses_a_bad_argument_by_name_creating_nothing(
        tmp_path, kwargs, field) -> None:
    db = tmp_path / "state" / "tidings.db"
    with pytest.raises(ValidationError) as caught:
        await prepare_store(db, **kwargs)
    assert caught.value.field == field
    assert not db.parent.exists()


@pytest.mark.parametrize(("kwargs", "field"), [
    *BAD, ({"mailbox_size": -1}, "mailbox_size"), ({"mailbox_size": "8"}, "mailbox_size")])
async def test_open_store_refuses_a_bad_argument_by_name_creating_nothing(
        tmp_path, kwargs, field) -> None:
    db = tmp_path / "state" / "tidings.db"
    with pytest.raises(ValidationError) as caught:
        async with open_store(db, **kwargs):
            pytest.fail("opened")
    assert caught.value.field == field
    assert not db.parent.exists()


@pytest.mark.parametrize("kwargs", [{"readers": 1}, {"max_batch": 1}, {"mailbox_size": 0}])
async def test_the_smallest_sizes_are_taken(tmp_path, kwargs) -> None:
    async with open_store(tmp_path / "tidings.db", **kwargs) as store:
        assert await store.read(lambda conn: conn.execute("SELECT 1").fetchone()[0]) == 1


@pytest.mark.parametrize("path", ["", None, b"tidings.db", "a\x00b.db", 5],
                         ids=["empty", "none", "bytes", "nul", "int"])
async def test_a_path_that_is_no_path_is_refused_by_name(tmp_path, monkeypatch, path) -> None:
    """As open_runtime's db_path is: "" was taken for the current directory ('database path
    /cwd is a directory', a path the caller never gave), and the rest failed in pathlib or
    the OS with a TypeError or ValueError naming nothing."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValidationError) as caught:
        async with open_store(path):
            pytest.fail("opened")
    assert caught.value.field == "path"
    with pytest.raises(ValidationError) as caught:
        read_database(path, status_report)
    assert caught.value.field == "path"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("clock", ["now", lambda: None, lambda: "x", lambda: float("nan"),
                                   lambda: 1e300, lambda: -1.0, lambda: True],
                         ids=["str", "None", "str-time", "nan", "1e300", "negative", "bool"])
async def test_a_clock_that_gives_no_unix_seconds_is_refused_by_name(tmp_path, clock) -> None:
    """open_runtime refuses such a clock by name; open_store and prepare_store took any: a
    string failed with a bare "'str' object is not callable", None or NaN with "NOT NULL
    constraint failed: process_epochs.started_at", each after the database was made and
    migrated, and "x" or 1e300 opened, stored as the process's start time. Refused naming
    clock, nothing created."""
    db = tmp_path / "state" / "tidings.db"
    for opening in (lambda: prepare_store(db, clock=clock), lambda: _opened(db, clock)):
        with pytest.raises(ValidationError) as caught:
            await opening()
        assert caught.value.field == "clock"
        assert not db.parent.exists()


async def _opened(db, clock) -> None:
    async with open_store(db, clock=clock):
        pytest.fail("opened")
