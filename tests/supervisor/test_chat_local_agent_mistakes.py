"""``tidings chat --local`` is where an agent is tried out, so it says what the agent did wrong.

A value its ``run`` returned (not sent: the reply is what it streams) is warned about there,
at the chat's quiet default, where the runtime's other warnings are not. Before, the chat
showed ``[completed]`` and no reply, with no word about why.

A failed turn is said on one line, as ``tidings chat --url`` does: the error of an agent that
raised with a multi-line message printed its later lines under ``[failed: ...]``, where they
read as lines of their own (a reply, a notice)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

RETURNING = '''
class ReturningAgent:
    async def run(self, turn):
        return "the answer"
'''

FAILING = '''
class FailingAgent:
    async def run(self, turn):
        raise RuntimeError("first line\\nsecond line\\n* looks like a notice")
'''


def _chat_hello(tmp_path: pathlib.Path, module: str, source: str,
                agent: str) -> subprocess.CompletedProcess[str]:
    """``tidings chat --local`` with the agent *agent* of *source* (written as *module*.py),
    told ``hello``: the finished process, its output as text."""
    (tmp_path / f"{module}.py").write_text(source)
    return subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
         "--db", str(tmp_path / "chat.db"), "--workspace", str(tmp_path),
         "--agent", f"{module}:{agent}"],
        input="hello\n", capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)


def test_the_local_chat_says_a_value_run_returned_is_not_sent(tmp_path: pathlib.Path) -> None:
    result = _chat_hello(tmp_path, "mistaken_agent", RETURNING, "ReturningAgent")
    assert result.returncode == 0, result.stderr
    assert "  [completed]" in result.stdout.splitlines()
    assert "the answer" not in result.stdout
    [warning] = [line for line in result.stderr.splitlines() if "agent_returned_a_value" in line]
    assert warning.startswith("tidings.channels.agent WARNING event=agent_returned_a_value ")
    assert "agent=mistaken_agent.ReturningAgent returned=str" in warning


def test_a_failed_turn_with_a_multi_line_error_is_one_line(tmp_path: pathlib.Path) -> None:
    result = _chat_hello(tmp_path, "failing_agent_h125", FAILING, "FailingAgent")
    assert result.returncode == 0, result.stderr
    failed = [line for line in result.stdout.splitlines() if "[failed" in line]
    assert len(failed) == 1, result.stdout
    assert "first line" in failed[0]
    assert "second line" in failed[0], result.stdout
    assert "looks like a notice" in failed[0], result.stdout
    assert not any(line.lstrip().startswith(("second line", "* looks"))
                   for line in result.stdout.splitlines()), result.stdout
