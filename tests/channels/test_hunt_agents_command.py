"""CommandAgent hunt: what a turn's process leaves behind when the turn is cancelled or times
out after the command itself has exited (its children still holding its pipes)."""

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
import trio.testing

from tidings.channels import CommandAgent
from tidings.errors import AgentError, ValidationError

posix_only = pytest.mark.skipif(os.name != "posix", reason="process groups and FIFOs are POSIX")

# The command starts a child that keeps its stdout (and so the turn's pipe) and exits at once.
# The child waits until the command has exited (it is reparented), then writes its pid to the
# FIFO the test reads, and sleeps.
_CHILD = ("import os, sys, time\n"
          "while os.getppid() == int(sys.argv[2]): time.sleep(0.005)\n"
          "f = open(sys.argv[1], 'w'); f.write(str(os.getpid())); f.flush()\n"
          "time.sleep(600)\n")
_COMMAND = ("import os, subprocess, sys; "
            "subprocess.Popen([sys.executable, '-c', sys.argv[1], sys.argv[2], str(os.getpid())])")


async def _run_and_stop(fake_turn: Callable[..., Any], tmp_path: pathlib.Path, *,
                        clock: trio.testing.MockClock | None = None) -> BaseException | None:
    """Run the command as a turn; once its child reports (the command has exited), cancel the
    turn, or (given the test's *clock*) move time past the agent's own timeout. Returns what
    run() raised (None if it was cancelled); fails if the child outlives the turn."""
    fifo = tmp_path / "alive"
    os.mkfifo(fifo)
    reader = trio.lowlevel.FdStream(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    holder = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # no EOF until the child writes
    agent = CommandAgent([sys.executable, "-c", _COMMAND, _CHILD, str(fifo)],
                         timeout=None if clock is None else 5.0)
    raised: list[BaseException] = []
    child_pid = 0
    try:
        async with reader:
            with trio.fail_after(10):  # a guard against hanging, not a wait
                async with trio.open_nursery() as nursery:
                    scope = trio.CancelScope()

                    async def run_turn() -> None:
                        with scope:
                            try:
                                await agent.run(fake_turn("", text=""))
                            except AgentError as exc:
                                raised.append(exc)

                    nursery.start_soon(run_turn)
                    child_pid = int(await reader.receive_some())  # the command has exited
                    os.close(holder)
                    holder = -1
                    if clock is None:
                        scope.cancel()
                    else:
                        clock.jump(5.0)
                        clock.autojump_threshold = 1.0  # the guard fires if it hangs
                # EOF: every writer is gone, so the child died with the turn.
                assert await reader.receive_some() == b""
    finally:
        if holder >= 0:
            os.close(holder)
        if child_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child_pid, signal.SIGKILL)
    return raised[0] if raised else None


@posix_only
async def test_hunt_cancel_kills_what_the_exited_command_left_holding_its_stdout(
        fake_turn: Callable[..., Any], tmp_path: pathlib.Path) -> None:
    assert await _run_and_stop(fake_turn, tmp_path) is None


@posix_only
async def test_hunt_timeout_kills_what_the_exited_command_left_holding_its_stdout(
        fake_turn: Callable[..., Any], tmp_path: pathlib.Path,
        mock_clock: trio.testing.MockClock) -> None:
    error = await _run_and_stop(fake_turn, tmp_path, clock=mock_clock)
    assert isinstance(error, AgentError)
    assert "ran past its timeout" in str(error)


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
