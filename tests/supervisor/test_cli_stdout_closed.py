"""``tidings ... >&-`` (stdout closed: Python starts with ``sys.stdout`` None) is a stdout the
command cannot write, as ``> /dev/full`` is: ``status`` and ``chat`` say so in one line on
stderr and exit 1 (the README's "a stdout it cannot write ...: exit 1 with one line on
stderr"); ``serve``, which writes nothing there, runs and stops as ever (exit 0). Before, each
ended in an ``AttributeError`` traceback ('NoneType' object has no attribute 'write' or
'flush'): status at its flush, the chats in their printing, and every command in ``main``'s
final flush."""

from __future__ import annotations

import os
import pathlib
import signal
import socket
import subprocess
import sys
import time

import pytest


def _closed_stdout(*argv: str) -> list[str]:
    return ["sh", "-c", 'exec "$@" >&-', "sh", sys.executable, "-m", "tidings.supervisor.cli",
            *argv]


def _run(tmp_path: pathlib.Path, *argv: str, stdin: str = "") -> subprocess.CompletedProcess:
    return subprocess.run(_closed_stdout(*argv), input=stdin, capture_output=True, text=True,
                          timeout=60, cwd=tmp_path, check=False)


def _said(stderr: str) -> list[str]:
    """stderr's lines but the chats' banners."""
    return [line for line in stderr.splitlines()
            if not line.startswith(("tidings chat (local): ", "tidings chat: ws://"))]


def test_status_says_it_cannot_write_its_report(tmp_path: pathlib.Path) -> None:
    made = subprocess.run([sys.executable, "-m", "tidings.supervisor.cli", "chat", "--local"],
                          input="hello\n", capture_output=True, text=True, timeout=60,
                          cwd=tmp_path, check=True)
    assert "terminal> hello" in made.stdout
    result = _run(tmp_path, "status", "--db", "tidings-local.db")
    assert result.returncode == 1, result.stderr
    assert _said(result.stderr) == [
        "tidings status: cannot write the report: Bad file descriptor"]


def test_a_local_chat_says_it_cannot_write_to_stdout(tmp_path: pathlib.Path) -> None:
    result = _run(tmp_path, "chat", "--local", stdin="hello\n")
    assert result.returncode == 1, result.stderr
    assert _said(result.stderr) == [
        "tidings chat: cannot write to stdout: [Errno 9] Bad file descriptor"]


def test_a_websocket_chat_that_cannot_connect_says_only_that(tmp_path: pathlib.Path) -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _run(tmp_path, "chat", "--url", f"ws://127.0.0.1:{port}", "--token",
                  "chat-test-token", stdin="hello\n")
    assert result.returncode == 1, result.stderr
    said = _said(result.stderr)
    assert len(said) == 1, result.stderr
    assert said[0].startswith(f"tidings chat: cannot connect to ws://127.0.0.1:{port}: ")


def test_serve_runs_and_stops_as_ever(tmp_path: pathlib.Path) -> None:
    process = subprocess.Popen(_closed_stdout("serve", "--port", "0"), stdin=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    assert process.stderr is not None
    try:
        deadline = time.monotonic() + 60
        for line in process.stderr:
            if "event=serving" in line:
                break
            assert time.monotonic() < deadline, "serve did not start"
        else:
            pytest.fail(f"serve ended before serving (exit {process.wait()})")
        process.send_signal(signal.SIGTERM)
        rest = process.stderr.read()
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    assert process.returncode == 0, rest
    assert "Traceback" not in rest
    assert "event=stopped" in rest


def test_a_process_the_agent_starts_has_a_stdout_still(tmp_path: pathlib.Path) -> None:
    """The /dev/null standing in for the closed stdout was not inherited when it landed on
    descriptor 1 itself (the usual case): a command an agent ran (a shell, git) started with no
    stdout, and the first file it opened became one, its output written into that file."""
    env = _with_test_agents()
    process = subprocess.Popen(_closed_stdout("serve", "--port", "0", "--agent",
                                              "spawning_agent:Agent"),
                               stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               cwd=tmp_path, env=env)
    said = _serve_then_stop(process)
    assert "child stdout: open\n" in said, "".join(said)


def test_a_process_the_agent_starts_has_a_stdin_still(tmp_path: pathlib.Path) -> None:
    """``tidings serve <&-``: descriptor 0 was left free for trio's epoll (not inherited), so
    a command an agent ran began with no stdin, the first file it opened taking its place (a
    ``cat`` printed that file)."""
    env = _with_test_agents()
    command = ["sh", "-c", 'exec "$@" <&-', "sh", sys.executable, "-m",
               "tidings.supervisor.cli", "serve", "--port", "0", "--agent",
               "spawning_agent:Agent"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, cwd=tmp_path, env=env)
    said = _serve_then_stop(process)
    assert "child stdin: open\n" in said, "".join(said)


def _with_test_agents() -> dict[str, str]:
    """The environment, with this directory's ``agents/`` importable by serve's ``--agent``."""
    agents = pathlib.Path(__file__).resolve().parent / "agents"
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(agents), os.environ.get("PYTHONPATH")]))}


def _serve_then_stop(process: subprocess.Popen[str]) -> list[str]:
    """Wait until *process* (a ``tidings serve``) says it serves, stop it with SIGTERM, and
    return all it wrote to stderr; it must have exited 0."""
    assert process.stderr is not None
    said: list[str] = []
    try:
        for line in process.stderr:
            said.append(line)
            if "event=serving" in line:
                break
        else:
            pytest.fail(f"serve ended before serving (exit {process.wait()})")
        process.send_signal(signal.SIGTERM)
        said.append(process.stderr.read())
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stderr.close()
    assert process.returncode == 0, "".join(said)
    return said
