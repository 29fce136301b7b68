"""``tidings serve --log-json``: one JSON object per line, also for a Python warning (an agent's
library warning as it is imported), which Python printed on stderr as lines of plain text in
the middle of the JSON lines a log shipper reads."""

from __future__ import annotations

import subprocess

import pytest
import trio

from .serve_process import environment, json_refusal, serve_json_and_stop, tidings_command


async def test_a_warning_is_a_json_line_too(tmp_path) -> None:
    entries = await serve_json_and_stop(tmp_path, "--agent", "warning_agent:Agent")
    [warned] = [entry for entry in entries if "an old library" in entry.get("message", "")]
    assert warned["level"] == "warning"
    assert "UserWarning: an old library\nsays so on two lines" in warned["message"]
    assert entries[-1]["event"] == "stopped"


async def test_a_warning_of_the_config_file_is_one_json_line(tmp_path) -> None:
    """A key the config takes with a warning (a memory mode that resolves to the only one) is
    read before logging is set up: it was printed as plain text, twice (the gateway's table
    was read twice), ahead of the JSON lines."""
    config = tmp_path / "tidings.toml"
    config.write_text('[channels.gateway.memory_scope]\nmode = "shared"\n')
    entries = await serve_json_and_stop(tmp_path, "--config", str(config))
    [warned] = [entry for entry in entries if "memory_scope.mode" in entry.get("message", "")]
    assert warned["level"] == "warning"
    assert "channels.gateway.memory_scope.mode: unknown memory mode 'shared'" in warned["message"]
    assert entries[-1]["event"] == "stopped"


@pytest.mark.parametrize(("flags", "key"), [
    (["--workspace", "missing"], "serve.workspace"),
    (["--agent", "no_such_module:Agent"], "serve.agent"),
    (["--token-file", "folder"], "gateway.token_file"),
], ids=["workspace", "agent", "token-file"])
async def test_a_refusal_after_logging_is_set_up_is_a_json_event(tmp_path, flags, key) -> None:
    """A configuration refused once logging had its form (a workspace that is no folder, an
    agent that does not import, a token file that is a folder: serve checks them as it starts)
    was only a plain line on stderr, where a refusal as the server fails (``serve_failed``)
    is a JSON event too: the log shipper of ``--log-json`` saw nothing of why it stopped. It
    is ``event=invalid_configuration`` naming the key, then the line, exit 2 as before (without
    --log-json the one line alone, as tests/supervisor/test_serve_paths_unstatable.py pins)."""
    (tmp_path / "folder").mkdir()
    result = await trio.run_process(
        tidings_command("serve", "--port", "0", "--log-json", *flags),
        stdin=subprocess.DEVNULL, capture_stdout=True, capture_stderr=True, check=False,
        env=environment(), cwd=tmp_path)
    assert result.returncode == 2
    json_refusal(result.stderr.decode(), key)
