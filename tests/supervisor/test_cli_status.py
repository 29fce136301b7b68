"""``tidings status``: counts and recent rows, one delivery, stable JSON, read-only."""

from __future__ import annotations

import json
import os
import pathlib
import sys

import pytest
import trio

import tidings
from tidings.supervisor._cli_status import parse_since
from tidings.supervisor.cli import main
from tidings.testing import MemoryRoute


@pytest.fixture
async def db(tmp_path: pathlib.Path) -> dict:
    """A database with a sent, a failed and an unknown delivery (runtime closed)."""
    path = tmp_path / "tidings.db"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    stuck = MemoryRoute()
    stuck.stall()
    async with tidings.open_runtime(path, workspace=workspace, grace=0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute())
        async with rt.open_turn(session_id) as ctx:
            sent = await ctx.output.send_text("hello")
            assert await sent.wait() == "delivered"
            rt.router.bind(session_id, MemoryRoute(fail=ValueError("bad\nrequest")))
            failed = await ctx.output.send_text("again")
            assert await failed.wait() == "failed"
            rt.router.bind(session_id, stuck)
            lost = await ctx.output.send_text("in flight")
            await stuck.wait_attempted(1)
    async with tidings.open_runtime(path, workspace=workspace):
        pass  # recovery: the in-flight row becomes unknown
    return {"path": path, "session": session_id, "sent": sent.delivery_id,
            "failed": failed.delivery_id, "unknown": lost.delivery_id}


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["status", *argv])
    out, err = capsys.readouterr()
    return code, out, err


async def test_json_overview_has_exactly_the_pinned_shape(db, capsys) -> None:
    code, out, _ = _run(capsys, "--db", str(db["path"]), "--json")
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["counts", "recent", "sending_claimant"]
    assert data["sending_claimant"] is None  # (no row sending: see test_cli_status_claimant*)
    assert data["counts"] == {"queued": 0, "sending": 0, "sent": 1, "failed": 1, "unknown": 1,
                              "unrouted": 0}
    assert [list(row) for row in data["recent"]] == [
        ["delivery_id", "session_id", "status", "attempts", "last_error", "updated_at"]] * 3
    by_id = {row["delivery_id"]: row for row in data["recent"]}
    assert by_id[db["unknown"]]["status"] == "unknown"
    assert by_id[db["failed"]]["last_error"] == "ValueError: bad\nrequest"
    assert by_id[db["sent"]]["attempts"] == 1
    assert all(isinstance(row["updated_at"], float) for row in data["recent"])


async def test_limit_0_prints_the_counts_alone(db, capsys) -> None:
    # No rows asked for: the overview must not say there are none to show (there are 3).
    code, out, _ = _run(capsys, "--db", str(db["path"]), "--limit", "0")
    assert code == 0
    assert out.splitlines()[1:] == [
        "counts: queued 0  sending 0  sent 1  failed 1  unknown 1  unrouted 0  (total 3)"]
    _, out, _ = _run(capsys, "--db", str(db["path"]), "--limit", "0", "--status", "failed")
    assert "failed deliveries to show" not in out
    assert out.splitlines()[-1].startswith("counts: ")


async def test_filters_narrow_the_rows(db, capsys) -> None:
    _, out, _ = _run(capsys, "--db", str(db["path"]), "--json", "--status", "failed")
    assert [row["delivery_id"] for row in json.loads(out)["recent"]] == [db["failed"]]
    _, out, _ = _run(capsys, "--db", str(db["path"]), "--json", "--session", db["session"])
    assert sum(json.loads(out)["counts"].values()) == 3  # (one no session has: exit 1,
    # test_cli_status_session.py)
    _, out, _ = _run(capsys, "--db", str(db["path"]), "--json", "--limit", "1",
                     "--since", "1h")
    data = json.loads(out)
    assert len(data["recent"]) == 1
    assert sum(data["counts"].values()) == 3
    _, out, _ = _run(capsys, "--db", str(db["path"]), "--json", "--since", "4102444800")
    assert json.loads(out)["recent"] == []  # nothing updated since 2100


async def test_the_table_shows_counts_and_recent_rows(db, capsys) -> None:
    code, out, _ = _run(capsys, "--db", str(db["path"]))
    assert code == 0
    assert "counts: queued 0  sending 0  sent 1  failed 1  unknown 1  unrouted 0  (total 3)" \
        in out
    for key in ("sent", "failed", "unknown"):
        assert db[key] in out
    assert "ValueError: bad request" in out  # one line per row


async def test_one_delivery_is_shown_with_its_events(db, capsys) -> None:
    code, out, _ = _run(capsys, "--db", str(db["path"]), db["unknown"])
    assert code == 0
    assert db["unknown"] in out
    for word in ("unknown", "delivery.queued", "delivery.sending", "delivery.unknown",
                 "stopped before recording"):
        assert word in out
    code, out, _ = _run(capsys, "--db", str(db["path"]), db["unknown"], "--json")
    data = json.loads(out)
    assert data["delivery_id"] == db["unknown"]
    assert (data["status"], data["outbox_status"], data["attempts"]) == ("unknown", "unknown", 1)
    assert [event["type"] for event in data["events"]] == [
        "delivery.queued", "delivery.sending", "delivery.unknown"]
    assert {"claimant", "work_status", "last_error", "created_at", "updated_at"} <= set(data)


async def test_an_unknown_delivery_id_exits_1(db, capsys) -> None:
    code, _, err = _run(capsys, "--db", str(db["path"]), "dlv_nope")
    assert code == 1
    assert "no delivery 'dlv_nope'" in err


def test_a_missing_database_exits_2_and_creates_nothing(tmp_path, capsys,
                                                        monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = _run(capsys)  # the default: ./tidings.db
    assert code == 2
    assert out == ""
    assert "no database at 'tidings.db'" in err
    assert "--db" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("argv", [["--since", "yesterday"], ["--limit", "-3"],
                                  ["--status", "done"], ["dlv_x", "--status", "sent"],
                                  # --limit was ignored beside a DELIVERY_ID, silently
                                  ["dlv_x", "--limit", "5"]])
def test_bad_arguments_exit_2_naming_the_option(tmp_path, capsys, argv) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["status", "--db", str(tmp_path / "x.db"), *argv])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert argv[0] in err or argv[1] in err


def test_an_empty_db_path_is_refused_as_such(capsys) -> None:
    # It was taken for the current directory: "'.' is a directory", of a path never given.
    with pytest.raises(SystemExit) as caught:
        main(["status", "--db", ""])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "argument --db: expected a path, got an empty string" in err


def test_since_accepts_seconds_iso_times_and_ages() -> None:
    assert parse_since("1700000000.5") == 1700000000.5
    assert parse_since("2023-11-14T22:13:20+00:00") == 1700000000.0
    assert parse_since("15m", now=lambda: 10_000.0) == 10_000.0 - 900
    assert parse_since("2d", now=lambda: 200_000.0) == 200_000.0 - 172_800


async def test_the_module_runs_as_a_script_and_writes_nothing(db) -> None:
    before = sorted(os.listdir(db["path"].parent))
    mtime = db["path"].stat().st_mtime_ns
    done = await trio.run_process(
        [sys.executable, "-m", "tidings.supervisor.cli", "status", "--db", str(db["path"]),
         "--json"], capture_stdout=True, capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["counts"]["sent"] == 1
    assert sorted(os.listdir(db["path"].parent)) == before
    assert db["path"].stat().st_mtime_ns == mtime
    missing = await trio.run_process(
        [sys.executable, "-m", "tidings.supervisor.cli", "status", "--db",
         str(db["path"].parent / "none.db")], capture_stdout=True, capture_stderr=True,
        check=False)
    assert missing.returncode == 2
    assert b"no database" in missing.stderr


def test_no_command_prints_usage_and_exits_2(capsys) -> None:
    assert main([]) == 2
    assert "status" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--limit", "100000000000000000000000"], ["--since", "nan"],
                                  ["--since", "inf"], ["--since", "1e400"],
                                  ["--since", "0001-01-01"]])
async def test_out_of_range_arguments_exit_2_naming_the_option(db, capsys, argv) -> None:
    with pytest.raises(SystemExit) as caught:
        main(["status", "--db", str(db["path"]), *argv])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {argv[0]}: expected " in err


async def test_the_overview_counts_messages_held_unanswered(tmp_path, capsys) -> None:
    """A stopped process's held messages (told at its next start) show in the text overview;
    the pinned JSON shape stays as it is (held is not in it)."""
    path = tmp_path / "held.db"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with tidings.open_runtime(path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web")
        await rt.hold_inbound(session_id, notice="not answered")
    code, out, _ = _run(capsys, "--db", str(path))
    assert code == 0
    assert "held: 1 accepted message(s) not yet answered" in out
    _, out, _ = _run(capsys, "--db", str(path), "--session", "nobody")
    assert "held:" not in out
    _, out, _ = _run(capsys, "--db", str(path), "--json")
    assert list(json.loads(out)) == ["counts", "recent", "sending_claimant"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("flags", [(), ("--json",), ("--json", "DELIVERY")],
                         ids=["overview", "json", "one delivery"])
async def test_a_stdout_it_cannot_write_is_one_line_on_stderr_and_exit_1(db, flags) -> None:
    """``tidings status > /dev/full``: the report cannot be written; say so in one line on
    stderr and exit 1, as the chat does, not with a traceback (a closed pipe, ``| head``,
    stays silent: the reader left on purpose)."""
    argv = [db["sent"] if flag == "DELIVERY" else flag for flag in flags]
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        result = await trio.run_process(
            [sys.executable, "-m", "tidings.supervisor.cli", "status", "--db", str(db["path"]),
             *argv], stdout=full, capture_stderr=True, check=False)
    finally:
        os.close(full)
    err = result.stderr.decode()
    assert result.returncode == 1, err
    assert "Traceback" not in err
    assert err.startswith("tidings status: cannot write the report")
    assert err.count("\n") == 1
