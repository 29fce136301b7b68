"""What starting the ``tidings`` command line costs: each command imports what it needs.

``tidings --help`` and ``tidings status`` (a read of the database with ``sqlite3``) have no use
for trio, trio-websocket, the actors or the channels, which took most of a second to import
before anything was done; ``tidings chat --url`` has none for the supervision tree ``tidings
serve`` runs. Each case runs the command line in a fresh interpreter (this one has imported
everything already) and reports which of those modules it loaded, with its exit code and
output, so the light path is shown to do the real work.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys
import textwrap

import pytest
import trio

import tidings
from tidings.supervisor import cli
from tidings.testing import MemoryRoute

HEAVY = ("trio", "trio_websocket", "tidings.actors", "tidings.channels",
         "tidings.supervisor._supervisor", "tidings.supervisor._serve")
"""Modules that are most of the start-up cost, and that only some commands need."""


async def _loaded(tmp_path: pathlib.Path, *argv: str) -> tuple[list[str], int, str, str]:
    """Run ``tidings *argv`` in a fresh interpreter: the :data:`HEAVY` modules it loaded, its
    exit code, stdout and stderr."""
    report = tmp_path / "loaded.json"
    code = textwrap.dedent(f"""
        import json, sys
        from tidings.supervisor.cli import main
        try:
            code = main({list(argv)!r})
        except SystemExit as exc:
            code = exc.code
        with open({str(report)!r}, "w") as f:
            json.dump(sorted(m for m in {HEAVY!r} if m in sys.modules), f)
        sys.exit(code)
    """)
    done = await trio.run_process([sys.executable, "-c", code], capture_stdout=True,
                                  capture_stderr=True, stdin=subprocess.DEVNULL, cwd=tmp_path,
                                  check=False)
    out, err = done.stdout.decode(), done.stderr.decode()
    assert report.exists(), err
    return json.loads(report.read_text()), done.returncode, out, err


@pytest.fixture
async def database(tmp_path: pathlib.Path) -> tuple[pathlib.Path, str]:
    """A closed database with one sent delivery, and that delivery's id."""
    path = tmp_path / "tidings.db"
    async with tidings.open_runtime(path, workspace=tmp_path, grace=0) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, MemoryRoute())
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text("hello")
            assert await handle.wait() == "delivered"
    return path, handle.delivery_id


@pytest.mark.parametrize("argv", [["--help"], ["--version"], [], ["nope"]])
async def test_the_top_level_imports_none_of_the_packages(tmp_path: pathlib.Path,
                                                          argv: list[str]) -> None:
    loaded, code, out, err = await _loaded(tmp_path, *argv)
    assert loaded == []
    if argv == ["--help"]:
        assert code == 0
        assert out == cli.build_parser().format_help()  # every command listed, with its help
    elif argv == ["--version"]:
        assert (code, out.strip()) == (0, f"tidings {tidings.__version__}")
    elif argv == []:
        assert code == 2
        assert err == cli.build_parser().format_help()
    else:
        assert code == 2
        assert "invalid choice: 'nope'" in err
        assert all(name in err.partition("choose from")[2] for name in ("serve", "status", "chat"))


async def test_status_reads_the_database_without_trio_the_actors_or_the_channels(
        tmp_path: pathlib.Path, database: tuple[pathlib.Path, str]) -> None:
    path, delivery_id = database
    loaded, code, out, err = await _loaded(tmp_path, "status", "--db", str(path), "--json")
    assert (loaded, code, err) == ([], 0, "")
    assert json.loads(out)["counts"]["sent"] == 1
    loaded, code, out, err = await _loaded(tmp_path, "status", "--db",
                                           str(tmp_path / "missing.db"))
    assert (loaded, code) == ([], 2)
    assert "give the database with --db PATH" in err
    # One delivery by id, and a --session: the id is checked by the runtime's rule
    # (tidings.store._ids), which imports neither trio nor the actors.
    loaded, code, out, err = await _loaded(tmp_path, "status", "--db", str(path), "--json",
                                           delivery_id)
    assert (loaded, code, err) == ([], 0, "")
    assert json.loads(out)["delivery_id"] == delivery_id
    loaded, code, out, err = await _loaded(tmp_path, "status", "--db", str(path), "--json",
                                           "--session", "no-such-session")
    assert (loaded, code, out) == ([], 1, "")  # looked up, and said to be no session
    assert "no session 'no-such-session'" in err
    loaded, code, _, err = await _loaded(tmp_path, "status", "--db", str(path), "bad\udcff")
    assert (loaded, code) == ([], 2)
    assert "not an id: is not valid Unicode (lone surrogate at index 3)" in err


async def test_chat_over_the_websocket_does_not_load_what_serve_runs(
        tmp_path: pathlib.Path) -> None:
    loaded, code, _, err = await _loaded(tmp_path, "chat", "--url", "ws://127.0.0.1:1",
                                   "--token-file", str(tmp_path / "no.token"))
    assert code == 2  # it ran: no token to connect with
    assert "--token-file" in err
    assert "tidings.supervisor._serve" not in loaded
    assert "trio_websocket" in loaded  # the client it uses


def test_each_command_is_still_registered_with_the_help_it_had() -> None:
    """The light parser lists the commands with the help their modules give them."""
    full = cli.build_parser()
    for only in [(), ("serve",), ("status",), ("chat",)]:
        assert cli.build_parser(only).format_help() == full.format_help()


async def test_import_tidings_supervisor_is_light_and_every_public_name_still_resolves(
        ) -> None:
    code = textwrap.dedent(f"""
        import sys
        import tidings.supervisor as supervisor
        print(sorted(m for m in {HEAVY!r} if m in sys.modules))
        namespace = {{}}
        exec("from tidings.supervisor import *", namespace)
        assert set(supervisor.__all__) <= set(namespace) <= set(dir(supervisor)) | {{
            "__builtins__"}}
        from tidings.supervisor._supervisor import Supervisor
        assert supervisor.Supervisor is Supervisor is namespace["Supervisor"]
        print("ok")
    """)
    done = await trio.run_process([sys.executable, "-c", code], capture_stdout=True,
                                  capture_stderr=True, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines() == ["[]", "ok"]
