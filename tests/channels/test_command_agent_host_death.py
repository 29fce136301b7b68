"""CommandAgent: a turn's command dies with its host. A host killed with SIGKILL runs no
cleanup, so nothing in it can kill the command: the command (and its process group) must not
run on orphaned, with nobody reading its output."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import subprocess
import sys
from typing import Any

import pytest
import trio

from tidings.channels import CommandAgent

from ..real_time import fail_after_real

posix_only = pytest.mark.skipif(os.name != "posix", reason="process groups and FIFOs are POSIX")

# The host: one CommandAgent turn, its chunks copied to the host's stdout.
_HOST = """\
import sys, trio
from tidings.channels import CommandAgent

class Turn:
    prompt, session_id, message_id = "", "s1", "m1"

    async def send_chunk(self, text):
        sys.stdout.write(text)
        sys.stdout.flush()

trio.run(CommandAgent(sys.argv[1:]).run, Turn())
"""
# The command: holds the FIFO open for writing (so the test reads EOF only once it and its
# background child are gone), says so with their pids, then sleeps.
_COMMAND = """\
import os, subprocess, sys
fifo = os.open(sys.argv[1], os.O_WRONLY)
child = subprocess.Popen(["sleep", "1000"], pass_fds=(fifo,))
print(os.getpid(), child.pid, flush=True)
os.read(0, 1)  # the prompt ("" then EOF): returns at once
child.wait()
"""


@posix_only
async def test_a_command_dies_with_its_host_when_the_host_is_killed(
        tmp_path: pathlib.Path) -> None:
    # The host was SIGKILLed mid-turn: the command and its background child ran on for as
    # long as they liked (here, forever), re-parented, with nobody reading their output.
    fifo = tmp_path / "alive"
    os.mkfifo(fifo)
    reader = trio.lowlevel.FdStream(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    pids: list[int] = []
    host = await trio.lowlevel.open_process(
        [sys.executable, "-c", _HOST, sys.executable, "-c", _COMMAND, str(fifo)],
        stdout=subprocess.PIPE)
    try:
        async with reader:
            with fail_after_real(10):  # a guard against hanging, not a wait
                assert host.stdout is not None
                line = b""
                while not line.endswith(b"\n"):
                    data = await host.stdout.receive_some()
                    assert data, "the host ended before the command was up"
                    line += data
                pids.extend(int(pid) for pid in line.split())
                host.send_signal(signal.SIGKILL)
                await host.wait()
                # EOF: every writer is gone, so the command and its child died with the host.
                while data := await reader.receive_some():
                    pass
    finally:
        with contextlib.suppress(ProcessLookupError):
            host.kill()
        for pid in pids:  # what a regression left running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with trio.CancelScope(shield=True):
            await host.wait()
            if host.stdout is not None:
                await host.stdout.aclose()


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="reads /proc (Linux)")
async def test_the_command_starts_as_a_direct_spawn_would(fake_turn: Any) -> None:
    # The command starts through a launcher (which registers it to die with the host): the
    # launcher's interpreter must leave no trace on it, neither an environment variable (PEP
    # 538 sets LC_CTYPE in a C locale), an ignored signal, nor an open descriptor.
    turn = fake_turn("", text="")
    with fail_after_real(10):  # a guard against hanging, not a wait
        await CommandAgent(["sh", "-c", "env; echo fds; ls /proc/$$/fd; "
                                        "grep SigIgn /proc/$$/status"],
                           env={"A": "1", "PATH": os.defpath}).run(turn)
    env, rest = turn.reply.split("fds\n")
    assert sorted(line for line in env.split() if not line.startswith("PWD=")) == [
        "A=1", f"PATH={os.defpath}", "TIDINGS_MESSAGE_ID=m1", "TIDINGS_SESSION_ID=s1"]
    *fds, _, ignored = rest.split()
    assert fds == ["0", "1", "2"]
    assert not int(ignored, 16) & (1 << (signal.SIGPIPE - 1))
