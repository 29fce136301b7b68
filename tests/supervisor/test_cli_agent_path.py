"""``--agent module:Name`` finds a module in the current directory, as the README's
``--agent pkg.mod:Name`` leads a user to expect (``uvicorn main:app`` style).

The installed ``tidings`` script runs with its own directory (``.venv/bin``), not the current
one, first on ``sys.path``; ``python -P`` reproduces that here, where ``python -m`` would
hide it (``-m`` puts the current directory on ``sys.path`` itself).
"""

from __future__ import annotations

import pathlib
import subprocess
import sys

AGENT = '''
class LocalAgent:
    async def run(self, turn):
        await turn.send_chunk("local agent says: " + turn.text)
'''


def tidings_script(cwd: pathlib.Path, *args: str, stdin: str = ""
                   ) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-c",
         "import sys; from tidings.supervisor.cli import main; sys.exit(main())", *args],
        input=stdin, capture_output=True, text=True, timeout=60, cwd=cwd, check=False)


def test_an_agent_module_in_the_current_directory_is_found(tmp_path: pathlib.Path) -> None:
    (tmp_path / "doc_local_agent.py").write_text(AGENT)
    result = tidings_script(tmp_path, "chat", "--local", "--db", str(tmp_path / "chat.db"),
                            "--agent", "doc_local_agent:LocalAgent", stdin="hello\n")
    assert result.returncode == 0, result.stderr
    assert "local agent says: hello" in result.stdout


def test_an_agent_module_the_standard_library_shadows_is_refused_saying_so(
        tmp_path: pathlib.Path) -> None:
    # The current directory comes after the standard library on sys.path (it must not shadow
    # it), so a first agent saved as secrets.py was never imported: the refusal said only
    # "'secrets' has no attribute 'LocalAgent'", of a file that plainly has it.
    (tmp_path / "secrets.py").write_text(AGENT)
    result = tidings_script(tmp_path, "chat", "--local", "--db", str(tmp_path / "chat.db"),
                            "--agent", "secrets:LocalAgent", stdin="hello\n")
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(
        "tidings chat: --agent: 'secrets' has no attribute 'LocalAgent'"), result.stderr
    assert "secrets.py of the current directory is not imported" in result.stderr
    assert not (tmp_path / "chat.db").exists()
