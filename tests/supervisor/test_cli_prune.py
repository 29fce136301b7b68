"""``tidings prune DB --older-than AGE``: retention from the command line."""

from __future__ import annotations

import json
import os
import pathlib
import sqlite3
import threading
import time

import pytest
import trio

import tidings
from tidings.errors import StoreError
from tidings.store import _prune
from tidings.supervisor import cli
from tidings.supervisor._cli_prune import EXIT_IN_USE
from tidings.testing import MemoryRoute

from .test_cli_status_paths import empty_file_beside_its_log

DAY = 86_400.0


def _count(db: pathlib.Path, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


@pytest.fixture
async def database(tmp_path: pathlib.Path) -> pathlib.Path:
    """A stopped database: two deliveries sent 40 days ago, one sent now, one unrouted 40
    days ago, and a client message id 40 days old."""
    db = tmp_path / "tidings.db"
    clock = [time.time() - 40 * DAY]
    async with tidings.open_runtime(db, workspace=tmp_path, grace=0,
                                    clock=lambda: clock[0]) as rt:
        session_id = await rt.create_session(channel="web")
        lost = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute())
        await rt.remember_client_message("web", "chat:1", "c1", session_id=session_id,
                                         outcome="accepted")
        async with rt.open_turn(session_id) as ctx:
            for text in ("old 1", "old 2"):
                assert await (await ctx.output.send_text(text)).wait() == "delivered"
        async with rt.open_turn(lost) as ctx:
            assert await (await ctx.output.send_text("nobody")).wait() == "unrouted"
        clock[0] = time.time()
        async with rt.open_turn(session_id) as ctx:
            assert await (await ctx.output.send_text("new")).wait() == "delivered"
    return db


async def test_prune_deletes_what_is_older_and_dry_run_only_counts(database, capsys) -> None:
    events, messages = _count(database, "events"), _count(database, "messages")
    assert messages == 4
    assert cli.main(["prune", str(database), "--older-than", "30d", "--dry-run"]) == 0
    dry = capsys.readouterr().out
    assert dry.startswith("would delete: deliveries 2  work_items 2  events ")
    assert dry.rstrip().endswith("client_messages 1  owed_answers 0")
    assert (_count(database, "outbox"), _count(database, "events")) == (4, events)

    assert cli.main(["prune", str(database), "--older-than", "30d"]) == 0
    assert capsys.readouterr().out == dry.replace("would delete", "deleted")
    assert (_count(database, "outbox"), _count(database, "client_messages")) == (2, 0)
    assert _count(database, "events") < events
    assert _count(database, "messages") == messages  # history stays

    assert cli.main(["prune", str(database), "--older-than", "12h", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) | {"cutoff": 0} == {
        "dry_run": False, "cutoff": 0, "deliveries": 0, "work_items": 0, "events": 0,
        "client_messages": 0, "owed_answers": 0}
    # with no retention at all, the new sent row goes too; the unrouted one never does
    assert cli.main(["prune", str(database), "--older-than", "0s"]) == 0
    capsys.readouterr()
    assert _count(database, "outbox") == 1


async def test_prune_refuses_while_a_runtime_holds_the_database(database, tmp_path,
                                                               capsys) -> None:
    async with tidings.open_runtime(database, workspace=tmp_path):
        code = cli.main(["prune", str(database), "--older-than", "1d"])
        assert code == EXIT_IN_USE == 3
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "already open in another runtime" in captured.err
        assert "stop it first" in captured.err
        dry = cli.main(["prune", str(database), "--older-than", "1d", "--dry-run"])
        assert dry == EXIT_IN_USE
    assert _count(database, "outbox") == 4
    assert cli.main(["prune", str(database), "--older-than", "1d"]) == 0  # free again


@pytest.mark.parametrize("age", ["30", "d", "-1d", "1.d", "1e3d", "30 days", "",
                                 "9" * 400 + "d"])
async def test_a_bad_age_is_bad_usage(database, capsys, age) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["prune", str(database), "--older-than", age])
    assert exited.value.code == 2
    assert "--older-than" in capsys.readouterr().err
    assert _count(database, "outbox") == 4


def test_no_database_is_said_and_nothing_is_made(tmp_path, capsys) -> None:
    missing = tmp_path / "nothing.db"
    assert cli.main(["prune", str(missing), "--older-than", "1d"]) == 2
    assert "no database at" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "text.db").write_text("not a database")
    assert cli.main(["prune", str(tmp_path / "text.db"), "--older-than", "1d"]) == 2
    assert "cannot prune" in capsys.readouterr().err
    assert cli.main(["prune", str(tmp_path), "--older-than", "1d"]) == 2
    assert "is a directory" in capsys.readouterr().err


@pytest.mark.parametrize("dry_run", [False, True], ids=["prune", "dry-run"])
def test_a_file_with_no_tidings_schema_is_no_database_and_is_left_as_it_was(tmp_path, capsys,
                                                                           dry_run) -> None:
    """An empty file (a placeholder made with touch, a path mistyped onto an empty log) holds
    no tidings database, as tidings status says of it: prune refuses it (exit 2) and leaves
    it empty, rather than writing a whole tidings schema into it and saying 'deleted: 0'."""
    empty = tmp_path / "empty.db"
    empty.touch()
    args = ["prune", str(empty), "--older-than", "1d"] + (["--dry-run"] if dry_run else [])
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert "empty.db is not a tidings database" in err
    assert empty.stat().st_size == 0
    assert sorted(path.name for path in tmp_path.iterdir()) == ["empty.db"]
    assert cli.main(["status", "--db", str(empty)]) == 2  # what status says of it too


@pytest.mark.parametrize("dry_run", [False, True], ids=["prune", "dry-run"])
async def test_an_empty_file_beside_its_log_is_refused_and_the_log_kept(tmp_path, capsys,
                                                                       dry_run) -> None:
    """A database file emptied after a crash, its last commits only in its ``-wal``: the
    read-only look at its schema let SQLite delete that log as stale, and prune then said
    'not a tidings database': the commits a start refuses to lose were gone. Refused as a
    start refuses it (exit 2, naming the log), and the log left as it was."""
    copy, log = await empty_file_beside_its_log(tmp_path, tmp_path)
    args = ["prune", str(copy / "tidings.db"), "--older-than", "1d"]
    assert cli.main(args + (["--dry-run"] if dry_run else [])) == 2
    err = capsys.readouterr().err
    assert "write-ahead log" in err
    assert "not a tidings database" not in err
    assert sorted(path.name for path in copy.iterdir()) == ["tidings.db", "tidings.db-wal"]
    assert (copy / "tidings.db-wal").read_bytes() == log


def _lock_is_a_directory(database: pathlib.Path) -> str:
    lock = database.parent / (database.name + ".runtime.lock")  # the runtime's, left there
    lock.unlink()
    lock.mkdir()
    return str(database)


def _name_too_long(database: pathlib.Path) -> str:
    return str(database.parent / ("d" * 300 + ".db"))


@pytest.mark.parametrize("dry_run", [False, True], ids=["prune", "dry-run"])
@pytest.mark.parametrize("path", [_lock_is_a_directory, _name_too_long],
                         ids=["lock-unopenable", "name-too-long"])
async def test_a_path_or_lock_the_os_refuses_is_one_line_and_exit_2(database, capsys, path,
                                                                   dry_run) -> None:
    """The runtime lock's file beside the database may not open (a database of another user,
    whose lock file is theirs, 0600; a read-only folder; something else there), and a path
    may be one the OS cannot even look up (a name over 255 bytes): tidings prune died of the
    OSError with a traceback and exit 1 (a stdout it cannot write), the database untouched.
    One line naming the path, exit 2, as for another path that holds no database to prune."""
    given = path(database)
    args = ["prune", given, "--older-than", "1d"] + (["--dry-run"] if dry_run else [])
    assert cli.main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("tidings prune: ")
    assert len(captured.err.splitlines()) == 1
    assert "Traceback" not in captured.err
    assert _count(database, "outbox") == 4


def test_an_empty_db_path_is_refused_as_such(tmp_path, capsys, monkeypatch) -> None:
    """"" was taken for the current directory: '. is a directory, not a database', a path the
    user never gave (tidings status --db "" was fixed so before)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        cli.main(["prune", "", "--older-than", "1d"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "DB: expected a path, got an empty string" in err
    assert "directory" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_fifo_is_no_database_and_the_prune_does_not_hang(tmp_path, capsys) -> None:
    """A named pipe at the path (exotic, but a mistyped path can name one): prune took the
    runtime lock and SQLite's read-only open blocked for ever waiting for a writer to the
    pipe, every runtime start on that database refused meanwhile as 'already open'."""
    fifo = tmp_path / "pipe.db"
    os.mkfifo(fifo)
    assert cli.main(["prune", str(fifo), "--older-than", "1d"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert sorted(path.name for path in tmp_path.iterdir()) == ["pipe.db"]


def test_a_symbolic_link_loop_is_said_as_such_not_as_no_database(tmp_path, capsys) -> None:
    """exists() answers False for a path the system will not look up, so a link loop where
    the database should be was 'no database at ...', where README (Retention) says such a
    path is said: one line with the system's reason, exit 2, as tidings status says it."""
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    for args in (["prune", str(tmp_path / "a"), "--older-than", "1d"],
                 ["status", "--db", str(tmp_path / "a")]):
        assert cli.main(args) == 2
        err = capsys.readouterr().err
        assert "cannot look at" in err
        assert "symbolic links" in err
        assert len(err.splitlines()) == 1


async def test_a_start_while_tidings_prune_holds_the_database_says_a_prune_holds_it(
        database, tmp_path, capsys, monkeypatch) -> None:
    """``tidings serve`` (any ``open_runtime``) started while ``tidings prune`` ran was told
    the database was 'already open in another runtime': no runtime was running, and the
    operator went looking for one. The lock file says which holds it; so does the refusal,
    and a second ``tidings prune`` is not told to stop a runtime either."""
    holding, finish = threading.Event(), threading.Event()
    real = _prune.prune_file

    def slow_prune(*args, **kwargs):
        holding.set()
        finish.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(tidings.store, "prune_file", slow_prune)
    async with trio.open_nursery() as nursery:
        codes = []

        async def prune() -> None:
            codes.append(await trio.to_thread.run_sync(
                cli.main, ["prune", str(database), "--older-than", "30d"]))

        nursery.start_soon(prune)
        try:
            assert await trio.to_thread.run_sync(holding.wait, 30)
            with pytest.raises(StoreError) as caught:
                async with tidings.open_runtime(database, workspace=tmp_path):
                    pass
            message = str(caught.value)
            assert f"is being pruned by tidings prune (pid {os.getpid()}): try again once " \
                "it has finished" in message
            assert "another runtime" not in message
            assert cli.main(["prune", str(database), "--older-than", "1d"]) == EXIT_IN_USE
            err = capsys.readouterr().err
            assert "tidings prune" in err
            assert "another runtime" not in err
            assert "stop it first" not in err
        finally:
            finish.set()
    assert codes == [0]
    async with tidings.open_runtime(database, workspace=tmp_path):  # free again
        pass


async def test_a_relative_path_that_reads_as_a_uri_prunes_that_file(database, capsys,
                                                                    monkeypatch) -> None:
    # SQLite (built to take URI file names, as Debian's is) read the relative path
    # 'file:tidings.db' as a URI: the prune checked the file given, then made, migrated and
    # pruned another one, ./tidings.db ('deleted: 0'), and the database given kept every row.
    folder = database.parent
    given = database.rename(folder / "file:tidings.db")
    assert not (folder / "tidings.db").exists()
    monkeypatch.chdir(folder)
    assert cli.main(["prune", "file:tidings.db", "--older-than", "30d"]) == 0
    assert capsys.readouterr().out.startswith("deleted: deliveries 2  work_items 2  ")
    assert _count(given, "outbox") == 2
    assert not (folder / "tidings.db").exists()


@pytest.mark.parametrize("dry_run", [False, True], ids=["prune", "dry-run"])
async def test_a_prune_interrupted_by_ctrl_c_says_what_it_deleted(database, capsys,
                                                                 monkeypatch, dry_run) -> None:
    """Ctrl-C in a long prune (a chunk per commit) ended it with exit 130 and nothing said:
    the chunks it had committed stayed deleted, and the operator was not told what went
    (serve's retention says so of a prune a stop cuts short). The counts of what went on
    stdout, as for a whole prune, a line on stderr saying it was interrupted, exit 130; a
    dry run, which changed nothing, says that."""
    monkeypatch.setattr(_prune, "DELIVERIES_PER_STEP", 1)
    real, steps = _prune.prune_step, []

    def interrupted_in_the_second_chunk(conn, cutoff, sweep_from=None):
        steps.append(cutoff)
        if len(steps) == 2:
            raise KeyboardInterrupt  # Ctrl-C, landing while the second chunk runs
        return real(conn, cutoff, sweep_from)

    monkeypatch.setattr(_prune, "prune_step", interrupted_in_the_second_chunk)
    args = ["prune", str(database), "--older-than", "30d"] + (["--dry-run"] if dry_run else [])
    assert cli.main(args) == 130
    out, err = capsys.readouterr()
    if dry_run:
        assert (out, err) == ("", "tidings prune: interrupted (a dry run: nothing changed)\n")
        assert _count(database, "outbox") == 4
        return
    assert out.startswith("deleted: deliveries 1  work_items 1  events ")
    assert err == ("tidings prune: interrupted: the counts printed went; run it again for "
                   "the rest\n")
    assert _count(database, "outbox") == 3  # the first chunk's delivery stays deleted
