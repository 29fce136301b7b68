"""CommandAgent hunt: what a turn's process leaves behind once the command itself has exited
(its children still holding its pipes), and arguments refused by name."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import sys
from collections.abc import Callable
from typing import Any

import pytest
import trio

from tidings.channels import CommandAgent
from tidings.errors import ValidationError

posix_only = pytest.mark.skipif(os.name != "posix", reason="process groups and FIFOs are POSIX")

# The command starts a child that keeps its stdout (and so the turn's pipe), waits until the
# child has written its pid to the FIFO the test reads (a byte on a private pipe says so), and
# exits; the child sleeps on, holding the turn's stdout.
_CHILD = ("import os, sys, time\n"
          "f = open(sys.argv[1], 'w'); f.write(str(os.getpid())); f.flush()\n"
          "os.write(int(sys.argv[2]), b'x')\n"
          "time.sleep(600)\n")
_COMMAND = ("import os, subprocess, sys\n"
            "r, w = os.pipe()\n"
            "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], str(w)], "
            "pass_fds=(w,))\n"
            "os.close(w); os.read(r, 1)\n")


@posix_only
async def test_hunt_what_the_exited_command_left_holding_its_stdout_dies_with_the_turn(
        fake_turn: Callable[..., Any], tmp_path: pathlib.Path) -> None:
    # Cancel and timeout killed such a child; without either the turn read its stdout until
    # the child ended, so it waited for it. It now ends when the command exits, child killed.
    fifo = tmp_path / "alive"
    os.mkfifo(fifo)
    reader = trio.lowlevel.FdStream(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    holder = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # no EOF until the child writes
    agent = CommandAgent([sys.executable, "-c", _COMMAND, _CHILD, str(fifo)])
    child_pid = 0
    try:
        async with reader:
            with trio.fail_after(10):  # a guard against hanging, not a wait
                await agent.run(fake_turn("", text=""))
                child_pid = int(await reader.receive_some())
                os.close(holder)
                holder = -1
                # EOF: every writer is gone, so the child died with the turn.
                assert await reader.receive_some() == b""
    finally:
        if holder >= 0:
            os.close(holder)
        if child_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child_pid, signal.SIGKILL)


@pytest.mark.parametrize(("argv", "kwargs", "field"), [
    (["ok"], {"timeout": "5"}, "timeout"),
    (["ok"], {"timeout": [1]}, "timeout"),
    (["ok"], {"env": 5}, "env"),
    (["ok"], {"env": {"A": 1}}, "env"),
    (["ok"], {"env": {3: "x"}}, "env"),
    (["ok"], {"env": {"A=B": "x"}}, "env"),
    (["ok"], {"env": {"": "x"}}, "env"),
    (["ok"], {"env": {"A": "x\0y"}}, "env"),
    (["ok"], {"cwd": 5}, "cwd"),
    (["ok\0"], {}, "argv[0]"),
    (["ok", "a\0b"], {}, "argv[1]"),
])
def test_hunt_bad_arguments_are_refused_by_name_not_at_the_first_turn(
        argv: Any, kwargs: dict[str, Any], field: str) -> None:
    # Each was accepted (or failed with a bare TypeError) and broke every turn later with a
    # TypeError / ValueError from the process spawn that named nothing.
    with pytest.raises(ValidationError) as info:
        CommandAgent(argv, **kwargs)
    assert info.value.field == field
