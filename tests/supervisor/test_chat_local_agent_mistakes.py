"""``tidings chat --local`` is where an agent is tried out: the warning about a value its
``run`` returned (not sent: the reply is what it streams) is shown there, at the chat's quiet
default, where the runtime's other warnings are not. Before, the chat showed ``[completed]``
and no reply, with no word about why."""

from __future__ import annotations

import pathlib
import subprocess
import sys

AGENT = '''
class ReturningAgent:
    async def run(self, turn):
        return "the answer"
'''


def test_the_local_chat_says_a_value_run_returned_is_not_sent(tmp_path: pathlib.Path) -> None:
    (tmp_path / "mistaken_agent.py").write_text(AGENT)
    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
         "--db", str(tmp_path / "chat.db"), "--workspace", str(tmp_path),
         "--agent", "mistaken_agent:ReturningAgent"],
        input="hello\n", capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr
    assert "  [completed]" in result.stdout.splitlines()
    assert "the answer" not in result.stdout
    [warning] = [line for line in result.stderr.splitlines() if "agent_returned_a_value" in line]
    assert warning.startswith("tidings.channels.agent WARNING event=agent_returned_a_value ")
    assert "agent=mistaken_agent.ReturningAgent returned=str" in warning
