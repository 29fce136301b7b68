"""``tidings chat --local`` says a failed turn on one line, as ``tidings chat --url`` does:
the error of an agent that raised with a multi-line message printed its later lines under
``[failed: ...]``, where they read as lines of their own (a reply, a notice)."""

from __future__ import annotations

import pathlib
import subprocess
import sys

AGENT = '''
class FailingAgent:
    async def run(self, turn):
        raise RuntimeError("first line\\nsecond line\\n* looks like a notice")
'''


def test_a_failed_turn_with_a_multi_line_error_is_one_line(tmp_path: pathlib.Path) -> None:
    (tmp_path / "failing_agent_h125.py").write_text(AGENT)
    result = subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
         "--db", str(tmp_path / "chat.db"), "--workspace", str(tmp_path),
         "--agent", "failing_agent_h125:FailingAgent"],
        input="hello\n", capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stderr
    failed = [line for line in result.stdout.splitlines() if "[failed" in line]
    assert len(failed) == 1, result.stdout
    assert "first line" in failed[0]
    assert "second line" in failed[0], result.stdout
    assert "looks like a notice" in failed[0], result.stdout
    assert not any(line.lstrip().startswith(("second line", "* looks"))
                   for line in result.stdout.splitlines()), result.stdout
