"""Running ``tidings serve`` as a subprocess for tests: its stderr log is read line by line
(so the pipe never fills) and tests wait on the lines they expect, never on the clock."""

from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import trio

AGENTS = pathlib.Path(__file__).resolve().parent / "agents"

START_STOP_TIMEOUT = 120
"""Real seconds a start (up to ``event=serving``) or a stop may take before it counts as a hang:
starting one imports all of tidings, which a busy machine can stretch to many seconds."""


class ServerProcess:
    """A running ``tidings serve``: ``url``, ``db``, ``token`` once it said ``event=serving``."""

    def __init__(self, process: trio.Process, db: pathlib.Path) -> None:
        self.process = process
        self.db = db
        self.lines: list[str] = []
        self.url = ""
        self.token_file: pathlib.Path | None = None
        self._changed = trio.Event()

    @property
    def token(self) -> str:
        assert self.token_file is not None
        return self.token_file.read_text().strip()

    async def read_stderr(self) -> None:
        assert self.process.stderr is not None
        buffer = b""
        while True:
            chunk = await self.process.stderr.receive_some(65536)
            if not chunk:
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            self.lines += [line.decode("utf-8", "replace") for line in complete]
            self._changed.set()
            self._changed = trio.Event()
        if buffer:
            self.lines.append(buffer.decode("utf-8", "replace"))
        self._changed.set()

    async def wait_line(self, predicate: Callable[[str], bool]) -> str:
        """The first log line (so far or to come) for which *predicate* is true."""
        seen = 0
        while True:
            for line in self.lines[seen:]:
                if predicate(line):
                    return line
            seen = len(self.lines)
            if self.process.returncode is not None and self._changed.is_set():
                raise AssertionError("tidings serve exited:\n" + "\n".join(self.lines[-30:]))
            await self._changed.wait()

    def signal(self, signum: int = signal.SIGTERM) -> None:
        self.process.send_signal(signum)


def tidings_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "tidings.supervisor.cli", *args]


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(AGENTS), env.get("PYTHONPATH")]))
    env["PYTHONUNBUFFERED"] = "1"
    return env


@asynccontextmanager
async def serve_process(db: pathlib.Path, *args: str, own_group: bool = False,
                        ignore: tuple[int, ...] = ()) -> AsyncIterator[ServerProcess]:
    """Start ``tidings serve --db DB --port 0 ARGS``; yield it once it serves; kill it if the
    test leaves it running. *own_group*: in a process group of its own (its pid), which a
    test can signal whole (``os.killpg``), as a terminal's Ctrl-C does. *ignore*: signals it
    starts with ignored, as ``nohup`` starts a command with SIGHUP ignored; the others it
    starts with their default action, as from a terminal, even when the suite itself runs with
    SIGHUP ignored (under ``nohup``: the server would inherit that and keep running on a
    hangup)."""

    def dispositions() -> None:
        for signum in (signal.SIGHUP, signal.SIGTERM):
            signal.signal(signum, signal.SIG_DFL)
        for signum in ignore:
            signal.signal(signum, signal.SIG_IGN)

    process = await trio.lowlevel.open_process(
        tidings_command("serve", "--db", str(db), "--port", "0", *args),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=environment(), start_new_session=own_group, preexec_fn=dispositions)
    server = ServerProcess(process, db)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.read_stderr)
            with trio.fail_after(START_STOP_TIMEOUT):
                line = await server.wait_line(lambda text: "event=serving " in text)
            server.url = re.search(r"url=(\S+)", line).group(1)
            token_file = re.search(r"token_file=(\S+)", line).group(1)
            server.token_file = pathlib.Path(token_file)
            yield server
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
            with trio.fail_after(START_STOP_TIMEOUT):
                await process.wait()
    except BaseException:
        print("tidings serve log (last lines):", *server.lines[-60:], sep="\n")  # for pytest
        raise
    finally:
        if process.returncode is None:
            process.kill()
            with trio.CancelScope(shield=True):
                await process.wait()


async def serve_json_and_stop(cwd: pathlib.Path, *args: str,
                              env: dict[str, str] | None = None) -> list[dict]:
    """Run ``tidings serve --port 0 --log-json *args`` in *cwd* (its ``tidings.db``) until it
    serves, stop it (SIGTERM, exit 0), and return its stderr's lines, each parsed as one whole
    JSON object. *env*: the server's environment (default :func:`environment`)."""
    process = await trio.lowlevel.open_process(
        tidings_command("serve", "--port", "0", "--log-json", *args),
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env=environment() if env is None else env, cwd=cwd)
    server = ServerProcess(process, cwd / "tidings.db")
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


def json_refusal(err: str, key: str) -> dict:
    """The ``invalid_configuration`` JSON event of *err*'s lines (``--log-json``: each line
    before the last one JSON), checked against the last, plain, line."""
    lines = err.splitlines()
    assert lines[-1].startswith(f"tidings serve: invalid configuration: {key}: ")
    events = [json.loads(line) for line in lines[:-1]]
    [refused] = [entry for entry in events if entry.get("event") == "invalid_configuration"]
    assert refused["level"] == "error"
    assert refused["key"] == key
    assert lines[-1].endswith(refused["reason"])
    return refused
