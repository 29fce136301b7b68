"""An agent module that exits while it is imported (a script's top level: ``argparse`` parsing
the argv of ``tidings serve`` and finding it wrong, a ``sys.exit()``), or a class that exits
when it is built, raised its ``SystemExit`` through ``load_agent``: ``tidings chat --local
--agent mod:Agent`` ended with exit code 2 and ``tidings: error: unrecognized arguments: chat
--local ...``, as if tidings had refused its own command line, naming neither the agent nor
its module. It is a :class:`ConfigError` naming the field, the exit its cause (what the
module printed before it exited stays printed; the refusal comes after it)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator

import pytest

from tidings.channels import load_agent
from tidings.errors import ConfigError

SCRIPT = """
import argparse
args = argparse.ArgumentParser().parse_args()  # at import: the argv is not its own

class Agent:
    async def run(self, turn):
        await turn.send_chunk("hi")
"""

EXITS_ON_INIT = """
import sys

class Agent:
    def __init__(self):
        sys.exit("no API key")

    async def run(self, turn):
        await turn.send_chunk("hi")
"""


@pytest.fixture
def modules(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = f"exiting_{uuid.uuid4().hex}"
    (tmp_path / f"{name}_script.py").write_text(textwrap.dedent(SCRIPT))
    (tmp_path / f"{name}_init.py").write_text(textwrap.dedent(EXITS_ON_INIT))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for suffix in ("_script", "_init"):
        sys.modules.pop(name + suffix, None)


def test_a_module_that_exits_at_import_is_a_config_error(
        modules: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # The command line the module's argparse reads, not the test runner's (whose argv a
    # pytest-xdist worker, or a bare ``pytest``, leaves with nothing argparse refuses).
    monkeypatch.setattr(sys, "argv", ["tidings", "chat", "--local", "--agent", "x:Agent"])
    with pytest.raises(ConfigError, match=r"importing module .* exited \(SystemExit: 2\)") \
            as info:
        load_agent(f"{modules}_script:Agent", field="channels.ops.agent")
    assert info.value.field == "channels.ops.agent"
    assert isinstance(info.value.__cause__, SystemExit)


def test_a_class_that_exits_when_built_is_a_config_error(modules: str) -> None:
    with pytest.raises(ConfigError, match=r"cannot create Agent .*SystemExit: no API key") \
            as info:
        load_agent(f"{modules}_init:Agent")
    assert info.value.field == "agent"


def test_tidings_chat_names_the_agent_that_exits(modules: str, tmp_path: pathlib.Path) -> None:
    where = next(p for p in sys.path if pathlib.Path(p, f"{modules}_script.py").exists())
    done = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
         "--db", str(tmp_path / "chat.db"), "--workspace", str(tmp_path),
         "--agent", f"{modules}_script:Agent"],
        input="hi\n", capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
        env={**os.environ, "PYTHONPATH": where})
    assert done.returncode == 2
    # The module's own argparse has printed its complaint; the last word names the agent.
    last = done.stderr.splitlines()[-1]
    assert last.startswith("tidings chat: --agent: "), done.stderr
    assert f"module '{modules}_script' exited (SystemExit: 2)" in last
