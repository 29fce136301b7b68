"""``tidings status --db PATH`` says what is wrong with a PATH that is no database: a
directory was reported as "no database at ...", as if nothing were there."""

from __future__ import annotations

import json
import os
import pathlib
import sqlite3

import pytest

import tidings
from tidings.errors import StoreError
from tidings.store import _status as status_module
from tidings.store import read_database, status_report
from tidings.supervisor.cli import main

from ..database_template import fresh_database


def _status(capsys, path) -> tuple[int, str, str]:
    code = main(["status", "--db", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_directory_is_named_as_a_directory_and_left_alone(tmp_path, capsys) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    code, out, err = _status(capsys, folder)
    assert code == 2
    assert out == ""
    assert "is a directory" in err
    assert "no database" not in err
    assert os.listdir(folder) == []


def test_read_database_refuses_a_directory_as_a_store_error(tmp_path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        read_database(tmp_path, status_report)


@pytest.mark.parametrize(("content", "says"), [(b"hello\n", "not a tidings database"),
                                               (b"", "not a tidings database")])
def test_a_file_that_is_no_database_is_named_so(tmp_path, capsys, content, says) -> None:
    """Pins what was right already: a text file or an empty file is not a database."""
    path = tmp_path / "notes.db"
    path.write_bytes(content)
    code, out, err = _status(capsys, path)
    assert code == 2
    assert out == ""
    assert says in err
    assert path.read_bytes() == content
    assert sorted(os.listdir(tmp_path)) == ["notes.db"]


@pytest.mark.parametrize("when", [float("inf"), 1e300, -1e300])
async def test_a_stored_time_out_of_range_is_printed_not_a_traceback(tmp_path, workspace,
                                                                     capsys, when) -> None:
    """A database written before ``open_runtime`` checked ``lease`` and ``clock`` may hold
    times no ``datetime`` can be made of (``lease=inf`` stored an infinite lease end):
    ``tidings status`` printed an ``OverflowError`` traceback for them."""
    path = tmp_path / "tidings.db"
    delivery_id = await _one_delivery_stored_with(path, workspace, lease_expires_at=when,
                                                  updated_at=when)
    assert main(["status", "--db", str(path), delivery_id]) == 0
    out = capsys.readouterr().out
    assert f"lease until  {when!r}" in out
    assert main(["status", "--db", str(path)]) == 0
    assert delivery_id in capsys.readouterr().out


async def _one_delivery_stored_with(path, workspace, **values: float) -> str:
    """A database at *path* holding one delivery, its outbox row then given *values* by hand
    (as versions that checked less could write them); returns its id."""
    async with tidings.open_runtime(path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("hi")
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"UPDATE outbox SET {', '.join(f'{key} = ?' for key in values)}",
                     tuple(values.values()))
        conn.commit()
    finally:
        conn.close()
    return handle.delivery_id


def _strict(text: str) -> object:
    """*text* as strict JSON: ``Infinity`` and ``NaN`` are Python's extension, which ``jq``
    and every other parser refuse."""
    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize("when", [float("inf"), float("-inf")])
async def test_json_holds_a_time_that_is_no_number_as_null(tmp_path, workspace, capsys,
                                                           when) -> None:
    """An infinite lease end (stored by versions that took ``lease=inf``) was written by
    ``--json`` as ``Infinity``: not JSON, so the scripts the option is for failed on it."""
    path = tmp_path / "tidings.db"
    delivery_id = await _one_delivery_stored_with(path, workspace, lease_expires_at=when)
    assert main(["status", "--db", str(path), delivery_id, "--json"]) == 0
    report = _strict(capsys.readouterr().out)
    assert report["delivery_id"] == delivery_id
    assert report["lease_expires_at"] is None
    assert main(["status", "--db", str(path), "--json"]) == 0
    overview = _strict(capsys.readouterr().out)
    assert [row["delivery_id"] for row in overview["recent"]] == [delivery_id]


def test_a_path_the_system_cannot_look_up_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    """A name over the file system's limit (or a folder this user may not search): the
    first look at the path raised the OSError out of read_database, and tidings status died
    with a traceback (exit 1). A StoreError naming the path; exit 2 with one line."""
    path = tmp_path / ("d" * 300 + ".db")
    with pytest.raises(StoreError, match="cannot look at"):
        read_database(path, status_report)
    code, out, err = _status(capsys, path)
    assert code == 2
    assert out == ""
    assert err.startswith("tidings status: cannot look at ")
    assert len(err.splitlines()) == 1
    assert os.listdir(tmp_path) == []


async def test_a_copy_made_while_a_runtime_ran_is_read_with_its_log(tmp_path, workspace,
                                                                    capsys) -> None:
    """The database and its ``-wal`` copied while a runtime held them (a backup of a live
    server, or the files of a crashed one): status reads the commits only in the log. To
    read a log SQLite needs its ``-shm`` index, which such a copy lacks: that one file is
    made (README, Looking at it); nothing else is, and the database and log are unchanged."""
    live = tmp_path / "live"
    live.mkdir()
    copy = tmp_path / "copy"
    copy.mkdir()
    async with tidings.open_runtime(live / "tidings.db", workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("only in the log")
        for name in ("tidings.db", "tidings.db-wal"):
            (copy / name).write_bytes((live / name).read_bytes())
    before = {name: (copy / name).read_bytes() for name in os.listdir(copy)}
    assert main(["status", "--db", str(copy / "tidings.db"), handle.delivery_id]) == 0
    assert handle.delivery_id in capsys.readouterr().out
    assert sorted(os.listdir(copy)) == ["tidings.db", "tidings.db-shm", "tidings.db-wal"]
    assert {name: (copy / name).read_bytes() for name in before} == before


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_is_named_as_not_a_regular_file(tmp_path, capsys, kind) -> None:
    """A named pipe or a device where the database should be (a mistyped path, ``/dev/null``)
    was 'no database at ...', sending the user looking for a missing file where something is
    there (``tidings prune`` said it already): it is named, not a regular file, exit 2, and
    nothing is read from it (a read of a pipe would wait for a writer)."""
    if kind == "fifo":
        path = tmp_path / "pipe.db"
        os.mkfifo(path)
    else:
        path = "/dev/null"
    code, out, err = _status(capsys, path)
    assert code == 2
    assert out == ""
    assert f"{str(path)!r} is not a regular file" in err
    assert "no database at" not in err
    if kind == "fifo":
        assert os.listdir(tmp_path) == ["pipe.db"]


def test_a_database_another_program_holds_locked_is_said_locked(tmp_path, capsys,
                                                                monkeypatch) -> None:
    """A tidings database another program holds an exclusive lock on (a ``sqlite3`` shell
    in ``locking_mode=EXCLUSIVE``, a tool rewriting it) was reported "is not a tidings
    database (database is locked)": a reason to move or delete a good database. It is said
    locked, after the read's wait for the lock (shortened here), exit 2, and read again once
    the lock is gone."""
    monkeypatch.setattr(status_module, "_BUSY_TIMEOUT_MS", 50)
    path = fresh_database(tmp_path / "tidings.db")
    holder = sqlite3.connect(path, isolation_level=None)
    try:
        holder.execute("PRAGMA locking_mode = EXCLUSIVE")
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(StoreError) as caught:
            read_database(path, status_report)
        assert "database is locked" in str(caught.value)
        assert "not a tidings database" not in str(caught.value)
        code, out, err = _status(capsys, path)
        assert (code, out) == (2, "")
        assert "database is locked" in err
        assert "not a tidings database" not in err
        assert len(err.splitlines()) == 1
    finally:
        holder.close()
    assert _status(capsys, path)[0] == 0


async def empty_file_beside_its_log(tmp_path, workspace) -> tuple[pathlib.Path, bytes]:
    """A folder ``copy`` under *tmp_path* holding an empty ``tidings.db`` beside the ``-wal`` of
    a runtime that committed a send (its last commits only in that log), as a crash and a file
    emptied after it leave them; returns the folder and the log's bytes."""
    live, copy = tmp_path / "live", tmp_path / "copy"
    live.mkdir()
    copy.mkdir()
    async with tidings.open_runtime(live / "tidings.db", workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            await ctx.output.send_text("only in the log")
        (copy / "tidings.db-wal").write_bytes((live / "tidings.db-wal").read_bytes())
    (copy / "tidings.db").write_bytes(b"")
    log = (copy / "tidings.db-wal").read_bytes()
    assert log
    return copy, log


async def test_an_empty_database_file_beside_its_log_is_refused_and_the_log_kept(
        tmp_path, workspace, capsys) -> None:
    """A database file emptied (or replaced by an empty one) after a crash, its last commits
    only in its ``-wal``: SQLite opening it, read-only too, takes that log for stale and
    deletes it. ``tidings status`` did so, then said "not a tidings database (no schema)":
    the operator's first look destroyed the commits a start refuses to lose (README: put the
    file back, or move the log away). It refuses as a start does, and leaves the log as it
    was."""
    copy, log = await empty_file_beside_its_log(tmp_path, workspace)
    with pytest.raises(StoreError, match="write-ahead log"):
        read_database(copy / "tidings.db", status_report)
    code, out, err = _status(capsys, copy / "tidings.db")
    assert (code, out) == (2, "")
    assert "write-ahead log" in err
    assert "not a tidings database" not in err
    assert sorted(os.listdir(copy)) == ["tidings.db", "tidings.db-wal"]
    assert (copy / "tidings.db-wal").read_bytes() == log
