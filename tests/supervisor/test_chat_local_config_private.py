"""``tidings chat --local --config FILE``: the config file (it may hold ``gateway.token``, and it
is often in the workspace) is private, as ``tidings serve`` makes it: an agent's
``send_file`` of it is refused as the runtime's own. Before, the local chat opened its runtime
without it, so a turn could send the file."""

from __future__ import annotations

import pathlib
import subprocess
import sys

AGENT = '''
from tidings.errors import ArtifactError


class SendsTheConfig:
    async def run(self, turn):
        try:
            await turn.output.send_file(turn.text, history_policy="transient")
        except ArtifactError as exc:
            await turn.send_chunk(f"refused: {exc.field}")
        else:
            await turn.send_chunk("sent")
'''


def _chat(cwd: pathlib.Path, line: str) -> subprocess.CompletedProcess[str]:
    (cwd / "config_agent.py").write_text(AGENT)
    (cwd / "tidings.toml").write_text('[gateway]\ntoken = "a-secret-token-of-32-characters-x"\n')
    (cwd / "notes.txt").write_text("not secret")
    return subprocess.run(
        [sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local",
         "--db", str(cwd / "chat.db"), "--workspace", str(cwd), "--config",
         str(cwd / "tidings.toml"), "--agent", "config_agent:SendsTheConfig"],
        input=line + "\n", capture_output=True, text=True, timeout=60, cwd=cwd, check=False)


def test_the_config_file_of_a_local_chat_cannot_be_sent(tmp_path: pathlib.Path) -> None:
    result = _chat(tmp_path, "tidings.toml")
    assert result.returncode == 0, result.stderr
    assert "terminal> refused: source" in result.stdout.splitlines(), result.stdout


def test_another_file_of_the_workspace_still_can(tmp_path: pathlib.Path) -> None:
    result = _chat(tmp_path, "notes.txt")
    assert result.returncode == 0, result.stderr
    assert "terminal> sent" in result.stdout.splitlines(), result.stdout
