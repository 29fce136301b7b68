"""CommandAgent: what a command leaves running when it exits (a background child, with or
without the turn's pipes) ends with the turn, and the turn ends when the command does."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import trio
import trio.testing

from tidings.channels import CommandAgent, _command_agent
from tidings.errors import AgentError

pidfds = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waits on a pidfd (Linux)")


async def _dies(pid: int) -> None:
    """Return once *pid* (not our child) has exited; a pidfd, so no polling or sleeping."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return  # already exited and reaped
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


def _state(pid: int) -> str | None:
    """The process state letter of *pid* from /proc (``Z`` for a zombie), None if gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return None


@contextlib.contextmanager
def _killed_anyway(pids: list[int]) -> Iterator[None]:
    """Kill what a failing test leaves running, so a regression leaks nothing."""
    try:
        yield
    finally:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


async def _leftover_turn(fake_turn: Callable[..., Any], script: str) -> tuple[str, int]:
    """Run ``sh -c script`` (which prints the pid of its background ``sleep`` first); return
    the reply and that pid once the turn ended and the sleep died (or fail within 10 s)."""
    pids: list[int] = []
    turn = fake_turn("", text="",
                     on_chunk=lambda _: pids.append(int(turn.reply.split()[0])) if not pids
                     else None)
    with _killed_anyway(pids), trio.fail_after(10):  # a guard against hanging, not a wait
        await CommandAgent(["sh", "-c", script]).run(turn)
        assert pids
        await _dies(pids[0])
    return turn.reply, pids[0]


@pidfds
async def test_a_background_child_holding_stdout_does_not_hold_the_turn(
        fake_turn: Callable[..., Any]) -> None:
    # The sleep inherits the turn's stdout and stderr: reading them to EOF waited for it, so
    # the turn lasted as long as it did (forever with no timeout).
    reply, _ = await _leftover_turn(fake_turn, "sleep 1000 & echo $!; echo done")
    assert reply.split()[1:] == ["done"]


@pidfds
async def test_a_background_child_holding_only_stderr_does_not_hold_the_turn(
        fake_turn: Callable[..., Any]) -> None:
    reply, _ = await _leftover_turn(fake_turn, "sleep 1000 >/dev/null & echo $!; echo done")
    assert reply.split()[1:] == ["done"]


@pidfds
async def test_a_background_child_is_killed_when_the_command_exits(
        fake_turn: Callable[..., Any]) -> None:
    # Holding no pipe, it did not delay the turn: it outlived it, running on unkilled.
    reply, _ = await _leftover_turn(
        fake_turn, "sleep 1000 </dev/null >/dev/null 2>&1 & echo $!; echo done")
    assert reply.split()[1:] == ["done"]


@pidfds
async def test_a_child_that_left_the_group_holding_stdout_is_not_waited_for(
        fake_turn: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # The group kill cannot reach it (its own session): the pipes are closed after EXIT_DRAIN
    # and the turn ends with what the command printed, instead of lasting as long as it does.
    monkeypatch.setattr(_command_agent, "EXIT_DRAIN", 0.05)
    # Popen returns once the child has exec'd, so it is in its own session before the exit.
    code = ("import subprocess, sys; child = subprocess.Popen(['sleep', '1000'], "
            "start_new_session=True); print(child.pid); print('done')")
    pids: list[int] = []
    turn = fake_turn("", text="",
                     on_chunk=lambda _: pids.append(int(turn.reply.split()[0])) if not pids
                     else None)
    with _killed_anyway(pids), trio.fail_after(10):  # a guard against hanging, not a wait
        await CommandAgent([sys.executable, "-c", code]).run(turn)
        assert turn.reply.split()[1:] == ["done"]
        assert _state(pids[0]) not in ("Z", "X", None)  # running on: the turn did not wait


@pidfds
async def test_output_still_in_the_pipe_at_exit_is_read_however_slow_the_turn(
        fake_turn: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # EXIT_DRAIN bounds the wait for a pipe that stays open and empty, never the reading of
    # what the command wrote: a turn that takes its first chunk only after the command exited
    # (and the drain ran out) still gets all of it.
    monkeypatch.setattr(_command_agent, "EXIT_DRAIN", 0)

    class SlowTurn(fake_turn):  # type: ignore[misc, valid-type]
        async def send_chunk(self, text: str) -> None:
            if not self.chunks:
                await _dies(int(text.split()[0]))
                await trio.testing.wait_all_tasks_blocked()  # the agent saw the exit first
            await fake_turn.send_chunk(self, text)

    # The pipe is made large enough for all of it, so the command exits at once; the agent
    # reads at most 64 KiB a time, so most of it is still in the pipe at the exit.
    code = ("import fcntl, os, sys; fcntl.fcntl(1, fcntl.F_SETPIPE_SZ, 1 << 20); "
            "sys.stdout.write(f'{os.getpid()}\\n'); sys.stdout.flush(); "
            "sys.stdout.write('x' * 500000)")
    turn = SlowTurn("", text="")
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await CommandAgent([sys.executable, "-c", code]).run(turn)
    assert turn.reply.split("\n", 1)[1] == "x" * 500000


async def test_a_missing_cwd_is_named_not_blamed_on_the_command(
        fake_turn: Callable[..., Any], tmp_path: pathlib.Path) -> None:
    # It said "cannot start sh: No such file or directory", as if sh were missing.
    with pytest.raises(AgentError) as info:
        await CommandAgent(["sh", "-c", "true"], cwd=tmp_path / "gone").run(fake_turn("", text=""))
    assert str(info.value) == "cannot start sh: its cwd: No such file or directory"
    assert str(tmp_path) not in str(info.value)


async def test_a_message_id_an_environment_cannot_hold_is_passed_empty(
        fake_turn: Callable[..., Any]) -> None:
    # A platform's message id with a NUL failed every turn for it: "ValueError: embedded null
    # byte" from the spawn, before the command ran.
    turn = fake_turn("", text="", message_id="a\0b")
    await CommandAgent(["sh", "-c", 'echo "[$TIDINGS_MESSAGE_ID]"']).run(turn)
    assert turn.reply == "[]\n"
