"""The bench scripts refuse arguments they cannot measure with as argparse does: exit 2 and one
line naming the flag, before any work, from any current directory (the scripts are run as
``.venv/bin/python bench/x.py``, README: Performance). Only refusals run here: the scripts
themselves are never run by the tests."""

from __future__ import annotations

import concurrent.futures
import importlib.util
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
import trio

import tidings

BENCH = pathlib.Path(tidings.__file__).parent / "bench"

REFUSED = [
    ("store_write.py", "--rows", "0"),
    ("store_write.py", "--rows", "100"),  # fewer rows than the 256 concurrent callers
    ("store_write.py", "--rounds", "0"),
    ("delivery.py", "--deliveries", "-5"),
    ("delivery.py", "--deliveries", "99"),  # fewer than one per sender at 100 senders
    ("delivery.py", "--rounds", "0"),
    ("gateway.py", "--deliveries", "10"),
    ("gateway.py", "--rounds", "0"),
    ("recovery.py", "--rows", "x"),
    ("recovery.py", "--rows", "100000,0"),
    ("recovery.py", "--per-session", "0"),
    ("recovery.py", "--dir", "/nonexistent/h10"),
    ("recovery.py", "--dir", __file__),  # a file, not a directory
    ("crash_harness.py", "--kills", "0"),
    ("crash_harness.py", "--sessions", "0"),
    ("crash_harness.py", "--sessions", "1"),  # the unrouted one only: nothing is delivered
    ("crash_harness.py", "--max-kill-after", "0"),
    ("faults.py", "--rates", "x"),
    ("faults.py", "--rates", "0.01,2"),
    ("faults.py", "--rates", "nan"),
    ("faults.py", "--seeds", "0"),
    ("faults.py", "--rates", "-0.1"),
    ("faults.py", "--sessions", "0"),
    ("load.py", "--sessions", "1"),  # the stalled one only: no other session to measure
    ("load.py", "--seconds", "nan"),
    ("load.py", "--seconds", "0"),
    ("load.py", "--latency", "-1"),
    ("load.py", "--rounds", "0"),
]


@pytest.fixture(scope="module")
def refused(tmp_path_factory: pytest.TempPathFactory
            ) -> dict[tuple[str, str, str], subprocess.CompletedProcess[str]]:
    """Every case of :data:`REFUSED` run as the README runs a script, each in a process and a
    current directory of its own, as many at a time as there are cores: one after another,
    the 27 starts (each importing trio and tidings) were 8 s of the run."""
    cwds = {case: tmp_path_factory.mktemp("bench-cwd") for case in REFUSED}

    def run(case: tuple[str, str, str]) -> subprocess.CompletedProcess[str]:
        script, flag, value = case
        command = [sys.executable, str(BENCH / script), flag, value]
        try:
            return subprocess.run(command, cwd=cwds[case], capture_output=True, text=True,
                                  timeout=60, check=False)
        except subprocess.TimeoutExpired:  # this case's failure, not every case's
            return subprocess.CompletedProcess(command, -1, "", "no exit within 60 s")

    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        return dict(zip(REFUSED, pool.map(run, REFUSED), strict=True))


@pytest.mark.parametrize(("script", "flag", "value"), REFUSED)
def test_a_bench_script_refuses_a_bad_argument_naming_the_flag(
        refused: dict[tuple[str, str, str], subprocess.CompletedProcess[str]], script: str,
        flag: str, value: str) -> None:
    result = refused[script, flag, value]
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert f"argument {flag}:" in result.stderr
    assert result.stdout == ""


def test_recovery_bench_says_how_many_rows_it_wrote(tmp_path: pathlib.Path) -> None:
    """The database is filled in whole sessions of --per-session rows: 15 rows at 10 a session
    is one session of 10, and the header says 10 (the figures below it are of those 10)."""
    result = subprocess.run([sys.executable, str(BENCH / "recovery.py"), "--rows", "15",
                             "--per-session", "10", "--dir", str(tmp_path)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    header = next(line for line in result.stdout.splitlines() if line.startswith("=="))
    assert header.startswith("== 10 rows in 1 session "), header
    assert "(--rows 15 asked: whole sessions of 10)" in header


def _bench_module(name: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """Load ``bench/<name>.py`` as a module, as ``python bench/<name>.py`` would find its
    imports (``bench/`` first on ``sys.path``)."""
    monkeypatch.syspath_prepend(str(BENCH))
    spec = importlib.util.spec_from_file_location(f"tidings_bench_{name}", BENCH / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_gateway_bench_stops_when_its_client_worker_exits_before_ready(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The clients run in a second process that says ``ready`` once connected; one that exits
    first (here: an interpreter that is ``false``) made the server read EOF forever, spinning
    a core with nothing said. (The real clock: the guard spans a real child process, as the
    other tests that start one.)"""
    gateway = _bench_module("gateway", monkeypatch)
    false = shutil.which("false")
    assert false is not None
    monkeypatch.setattr(sys, "executable", false)
    with trio.fail_after(60), pytest.raises(BaseExceptionGroup) as caught:
        await gateway.gateway_run(tmp_path / "gateway.db", 1, 1,  # type: ignore[attr-defined]
                                  pipelined=False)
    found, _ = caught.value.split(RuntimeError)
    assert found is not None, caught.value
    assert "the client worker exited before it was ready (exit code 1)" in repr(found)


async def test_gateway_bench_stops_when_its_client_worker_exits_mid_run(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker that dies once ready (a crash, a connection the server closed) left its
    deliveries waiting for a client that never comes: the senders waited forever."""
    gateway = _bench_module("gateway", monkeypatch)
    token = gateway.TOKEN  # type: ignore[attr-defined]
    worker = tmp_path / "worker"  # connects as the real one does, leaves, says ready, dies
    worker.write_text(f"""#!{sys.executable}
import os, sys, trio
from tidings.channels import GatewayClient

async def main():
    async with GatewayClient.connect(sys.argv[3], token={token!r}, conversation="c0"):
        pass  # the conversation's session exists; no client is left in it
    print("ready", flush=True)
    os._exit(3)

trio.run(main)
""")
    worker.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(worker))
    with trio.fail_after(60), pytest.raises(BaseExceptionGroup) as caught:
        await gateway.gateway_run(tmp_path / "gateway.db", 1, 1,  # type: ignore[attr-defined]
                                  pipelined=False)
    found, _ = caught.value.split(RuntimeError)
    assert found is not None, caught.value
    assert "the client worker exited mid-run (exit code 3)" in repr(found)


def test_every_bench_command_the_readme_names_exists_with_its_flags() -> None:
    """Every ``bench/<script>.py`` README names (Performance, crash safety, the long suites) is
    a script here, and every ``--flag`` it writes after one is an option of that script."""
    readme = (BENCH.parent / "README.md").read_text(encoding="utf-8")
    named: dict[str, set[str]] = {}
    for script, rest in re.findall(r"bench/([a-z_]+\.py)([^`\n#]*)", readme):
        named.setdefault(script, set()).update(re.findall(r"--[a-z][a-z-]*", rest))
    assert {"store_write.py", "delivery.py", "recovery.py", "crash_harness.py", "gateway.py",
            "faults.py", "load.py"} <= set(named)
    for script, flags in sorted(named.items()):
        assert (BENCH / script).is_file(), script
        if not flags:
            continue
        usage = subprocess.run([sys.executable, str(BENCH / script), "--help"],
                               cwd=BENCH.parent, capture_output=True, text=True, timeout=60,
                               check=True).stdout
        missing = sorted(flag for flag in flags
                         if not re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", usage))
        assert not missing, f"bench/{script}: README names {missing}, --help has not"
