"""The README's runnable parts do what it says: its embedding example runs as shown, and every
flag its `tidings serve` / `tidings status` / `tidings chat` lines name is a real option."""

from __future__ import annotations

import ast
import pathlib
import re
import subprocess
import sys

import tidings

ROOT = pathlib.Path(tidings.__file__).parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README, flags=re.DOTALL)


def test_the_embedding_example_runs_as_shown(tmp_path: pathlib.Path) -> None:
    example = next(block for block in _python_blocks() if "trio.run(main)" in block)
    result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "delivered"
    assert "status='sent'" in lines[1]
    assert "text='Done'" in lines[2]
    assert lines[2].count("HistoryMessage(") == 1  # the progress note is transient: no row
    assert len(lines) == 3


def _help(command: str) -> str:
    return subprocess.run([sys.executable, "-m", "tidings.supervisor.cli", command, "--help"],
                          capture_output=True, text=True, timeout=60, check=True).stdout


def test_every_flag_the_readme_names_exists() -> None:
    for command in ("serve", "status", "chat", "prune"):
        usage = _help(command)
        named = set(re.findall(rf"tidings {command}\b[^`\n]*(?:\n[^`\n]*){{0,2}}", README))
        flags = {flag for line in named for flag in re.findall(r"--[a-z][a-z-]*", line)}
        assert flags, command
        missing = sorted(flag for flag in flags if flag not in usage)
        assert not missing, f"tidings {command}: README names {missing}, --help has not"


def test_every_python_block_is_python() -> None:
    # Fragments may show a body of async code (`async with ...` at the top): taken as in
    # asyncio's REPL. A block meant to run as a program is run by its own test.
    blocks = _python_blocks()
    assert len(blocks) >= 3, "README's python blocks are not found"  # the examples run below
    for block in blocks:
        compile(block, "README.md", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)


def test_the_reconcile_signature_can_be_written_as_shown() -> None:
    block = next(block for block in _python_blocks() if "async def reconcile(" in block)
    namespace: dict[str, object] = {}
    exec(block, namespace)  # annotations are evaluated when the function is defined
    assert callable(namespace["reconcile"])


def test_the_channel_example_runs_as_shown(tmp_path: pathlib.Path) -> None:
    example = next(block for block in _python_blocks() if "class OpsChannel(" in block)
    result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("started session_"), lines
    assert lines[-1].startswith("completed session_"), lines
    assert "hi" in lines  # the echo agent's reply reached the platform stand-in
    assert (tmp_path / "tidings.db").exists()


def test_the_supervisor_example_runs_as_shown(tmp_path: pathlib.Path) -> None:
    section = README.split("## Supervising your own tasks", 1)[1].split("\n## ", 1)[0]
    example, printed = re.findall(r"```(?:python)?\n(.*?)```", section, flags=re.DOTALL)[:2]
    assert "open_supervisor(" in example
    result = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == printed  # what the README says it prints, line for line
    assert "restart_intensity_exceeded" in result.stderr


_USES_THE_FIXTURES = """
from tidings.testing import MemoryRoute


async def test_rt(rt):
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hi")
    assert await handle.wait() == "delivered"


async def test_faulty_rt(faulty_rt):
    session_id = await faulty_rt.create_session(channel="web")
    faulty_rt.router.bind(session_id, MemoryRoute())
    async with faulty_rt.open_turn(session_id) as ctx:
        handles = [await ctx.output.send_text(str(i)) for i in range(3)]
    assert [await h.wait() for h in handles] == ["delivered", "unknown", "delivered"]
    assert [r.seam for r in faulty_rt.supervisor.fault_plan.injected] == ["deliver"]
"""


def test_the_conftest_example_gives_working_fixtures_in_trio_mode(
        tmp_path: pathlib.Path) -> None:
    # What the Testing section tells a host to write: its conftest block, pytest-trio's
    # trio mode, and tests that take the two fixtures.
    example = next(block for block in _python_blocks() if block.startswith("# conftest.py"))
    (tmp_path / "conftest.py").write_text(example, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\ntrio_mode = true\n", encoding="utf-8")
    (tmp_path / "test_host.py").write_text(_USES_THE_FIXTURES, encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                             str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_the_states_table_lists_every_move_of_an_outbox_row() -> None:
    """The README's **States** table names, for each target state, exactly the sources
    ``tidings.store.TRANSITIONS`` allows (the written-at-send row aside)."""
    from tidings.store import TRANSITIONS

    table = README.split("- **States.**", 1)[1].split("\n\n", 2)[1]
    listed: dict[str, set[str]] = {}
    for line in table.splitlines()[2:]:
        target, sources = (cell.strip() for cell in line.strip().strip("|").split("|")[:2])
        if sources == "(written)":
            continue
        listed.setdefault(target.strip("`"), set()).update(
            source.strip().strip("`") for source in sources.split(","))
    assert listed == {target: set(sources) for target, (sources, _, _) in TRANSITIONS.items()}
