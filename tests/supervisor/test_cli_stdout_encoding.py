"""``tidings status`` and ``tidings chat`` on a stdout whose encoding cannot hold what they
print (a legacy locale such as ISO-8859-1, ``PYTHONIOENCODING``, a Windows redirect in its
ANSI code page): such characters are printed escaped (``\\u65e5``), as control characters are,
and ``--json`` stays valid JSON (``\\u`` escapes). Before, the first reply, error or session
id holding one ended the command with a ``UnicodeEncodeError`` traceback."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest
import trio

import tidings

_TEXT = "日本 café 😀"  # past the BMP too: a \\U escape is no JSON


async def _run(tmp_path: pathlib.Path, *args: str,
               stdin: str = "") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONIOENCODING": "latin-1", "PYTHONPATH": str(tmp_path)}
    with trio.fail_after(60):
        return await trio.run_process(
            [sys.executable, "-m", "tidings.supervisor.cli", *args], stdin=stdin.encode(),
            capture_stdout=True, capture_stderr=True, env=env, cwd=tmp_path, check=False)


@pytest.fixture
async def db(tmp_path: pathlib.Path, workspace) -> tuple[pathlib.Path, str]:
    path = tmp_path / "tidings.db"
    async with tidings.open_runtime(path, workspace=workspace) as rt:
        session_id = await rt.create_session(channel="web", session_id="s-日本")
        async with rt.open_turn(session_id) as ctx:
            handle = await ctx.output.send_text(_TEXT)
    return path, handle.delivery_id


@pytest.mark.parametrize("one", [False, True])
async def test_status_prints_what_the_encoding_cannot_hold_escaped(db, tmp_path, one) -> None:
    path, delivery_id = db
    result = await _run(tmp_path, "status", "--db", str(path), *([delivery_id] if one else []))
    assert result.returncode == 0, result.stderr.decode()
    assert result.stderr == b""
    lines = result.stdout.decode("latin-1").splitlines()
    if one:
        assert r"text         \u65e5\u672c café \U0001f600" in lines
        assert r"session      s-\u65e5\u672c (seq 1)" in lines
    else:
        assert any(line.endswith(r"  s-\u65e5\u672c") for line in lines), lines


@pytest.mark.parametrize("one", [False, True])
async def test_status_json_stays_valid_json(db, tmp_path, one) -> None:
    path, delivery_id = db
    result = await _run(tmp_path, "status", "--db", str(path), "--json",
                  *([delivery_id] if one else []))
    assert result.returncode == 0, result.stderr.decode()
    report = json.loads(result.stdout.decode("latin-1"))
    if one:
        assert (report["text"], report["session_id"]) == (_TEXT, "s-日本")
    else:
        assert report["recent"][0]["session_id"] == "s-日本"


async def test_a_local_chat_prints_a_reply_the_encoding_cannot_hold_escaped(tmp_path) -> None:
    (tmp_path / "nihon_agent.py").write_text(
        "class Nihon:\n"
        "    async def run(self, turn):\n"
        f"        await turn.send_chunk({_TEXT!r})\n", encoding="utf-8")
    result = await _run(tmp_path, "chat", "--local", "--db", str(tmp_path / "chat.db"),
                  "--workspace", str(tmp_path), "--agent", "nihon_agent:Nihon",
                  stdin="hello\n")
    assert result.returncode == 0, result.stderr.decode()
    assert "Traceback" not in result.stderr.decode()
    assert r"terminal> \u65e5\u672c café \U0001f600" in result.stdout.decode("latin-1").splitlines()
