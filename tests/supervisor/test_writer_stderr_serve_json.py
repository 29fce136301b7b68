"""``tidings serve --log-json --writer process``: still one JSON object per line when the writer
process's interpreter writes on stderr (a Python warning, a fatal error, a start-up hook's
print). It inherited serve's stderr, so those lines landed raw between the JSON lines a log
shipper reads; serve now logs each as ``event=writer_process_stderr``, the line a field."""

from __future__ import annotations

import os

from .serve_process import environment, serve_json_and_stop

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
    entries = await serve_json_and_stop(tmp_path, "--writer", "process", env=env)
    relayed = [entry for entry in entries if entry.get("event") == "writer_process_stderr"]
    lines = [entry["line"] for entry in relayed]
    assert any(line.endswith("UserWarning: an old setting") for line in lines), lines
    assert "Fatal Python error: a line of plain text" in lines
    assert "bad \\udcff byte\x1b[0m" in lines  # the byte as the text \udcff, as paths show
    assert {entry["level"] for entry in relayed} == {"warning"}
    assert {entry["logger"] for entry in relayed} == {"tidings.store"}
    assert entries[-1]["event"] == "stopped"
