"""Ctrl-C while ``tidings`` still loads the command's module (the first second or two of
``tidings chat`` or ``tidings serve`` on a small machine: trio, the runtime, the websocket
client) ends it with exit 130 and nothing on stderr, as a Ctrl-C once it runs does (the
README: "Ctrl-C ends it at any point, connecting included (exit 130)"). Before, the
``KeyboardInterrupt`` came out of ``main`` as a traceback of whatever import it landed in."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

# The command line as the installed script runs it, with a Ctrl-C (a real SIGINT, to this
# process) arriving while the command's module is being imported.
_SCRIPT = """
import importlib, os, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal
real = importlib.import_module
def import_module(name, *args, **kwargs):
    if name.startswith("tidings.supervisor._cli_"):
        os.kill(os.getpid(), signal.SIGINT)
    return real(name, *args, **kwargs)
importlib.import_module = import_module
from tidings.supervisor import cli
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.parametrize("argv", [
    ["chat", "--url", "ws://127.0.0.1:1", "--token", "chat-test-token"],
    ["chat", "--local"],
    ["serve", "--port", "0"],
    ["status"],
])
def test_ctrl_c_while_the_command_loads_is_exit_130_without_a_traceback(
        tmp_path: pathlib.Path, argv: list[str]) -> None:
    result = subprocess.run([sys.executable, "-c", _SCRIPT, *argv], input="",
                            capture_output=True, text=True, timeout=60, cwd=tmp_path,
                            check=False)
    assert result.returncode == 130, result.stderr
    assert result.stderr == ""
    assert result.stdout == ""
    assert list(tmp_path.iterdir()) == []  # nothing was started: no database, no token
