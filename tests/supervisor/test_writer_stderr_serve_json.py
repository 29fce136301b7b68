"""``tidings serve --log-json --writer process``: still one JSON object per line when the writer
process's interpreter writes on stderr (a Python warning, a fatal error, a start-up hook's
print). It inherited serve's stderr, so those lines landed raw between the JSON lines a log
shipper reads; serve now logs each as ``event=writer_process_stderr``, the line a field."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import trio

from .serve_process import START_STOP_TIMEOUT, ServerProcess, environment, tidings_command

_HOOK = """\
import sys, warnings
import tidings.store._writer_child as child

_real = child.connect_writer

def _hooked(*args, **kwargs):  # the writer child's only: serve's own writer does not call it
    warnings.warn("an old setting", UserWarning)
    sys.stderr.write("Fatal Python error: a line of plain text\\n")
    sys.stderr.flush()
    sys.stderr.buffer.write(b"bad \\xff byte\\x1b[0m\\n")
    sys.stderr.buffer.flush()
    return _real(*args, **kwargs)

child.connect_writer = _hooked
"""


async def test_the_writer_process_stderr_is_json_lines_too(tmp_path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(_HOOK)
    env = environment()
    env["PYTHONPATH"] = os.pathsep.join([str(hooks), env["PYTHONPATH"]])
    process = await trio.lowlevel.open_process(
        tidings_command("serve", "--port", "0", "--log-json", "--writer", "process"),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=env, cwd=tmp_path)
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
    entries = [json.loads(line) for line in server.lines if line]  # every line whole JSON
    relayed = [entry for entry in entries if entry.get("event") == "writer_process_stderr"]
    lines = [entry["line"] for entry in relayed]
    assert any(line.endswith("UserWarning: an old setting") for line in lines), lines
    assert "Fatal Python error: a line of plain text" in lines
    assert "bad \\udcff byte\x1b[0m" in lines  # the byte as the text \udcff, as paths show
    assert {entry["level"] for entry in relayed} == {"warning"}
    assert {entry["logger"] for entry in relayed} == {"tidings.store"}
    assert entries[-1]["event"] == "stopped"
