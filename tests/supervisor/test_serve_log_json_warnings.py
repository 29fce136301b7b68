"""``tidings serve --log-json``: one JSON object per line, also for a Python warning (an agent's
library warning as it is imported), which Python printed on stderr as lines of plain text in
the middle of the JSON lines a log shipper reads."""

from __future__ import annotations

import json
import signal
import subprocess

import trio

from .serve_process import START_STOP_TIMEOUT, ServerProcess, environment, tidings_command


async def _serve_and_stop(tmp_path, *args: str) -> list[dict]:
    """Run ``tidings serve --port 0 --log-json *args`` until it serves, stop it (SIGTERM, exit
    0), and return its stderr's lines, each parsed as one whole JSON object."""
    process = await trio.lowlevel.open_process(
        tidings_command("serve", "--port", "0", "--log-json", *args),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=environment(), cwd=tmp_path)
    server = ServerProcess(process, tmp_path / "tidings.db")
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.read_stderr)
            with trio.fail_after(START_STOP_TIMEOUT):
                await server.wait_line(lambda line: '"event": "serving"' in line)
                process.send_signal(signal.SIGTERM)
                assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()
    return [json.loads(line) for line in server.lines if line]


async def test_a_warning_is_a_json_line_too(tmp_path) -> None:
    entries = await _serve_and_stop(tmp_path, "--agent", "warning_agent:Agent")
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
    entries = await _serve_and_stop(tmp_path, "--config", str(config))
    [warned] = [entry for entry in entries if "memory_scope.mode" in entry.get("message", "")]
    assert warned["level"] == "warning"
    assert "channels.gateway.memory_scope.mode: unknown memory mode 'shared'" in warned["message"]
    assert entries[-1]["event"] == "stopped"
