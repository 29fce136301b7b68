"""CommandAgent through the channel base: /cancel and shutdown kill the running command and
what it started; a command that fails ends its turn ``failed`` with a clear error, and the
channel goes on serving."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

import pytest
import trio

import tidings
from tidings.channels import ChannelConfig, CommandAgent

from .conftest import RecordingChannel, rows

pidfds = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waits on a pidfd (Linux)")

# Prints its own pid and its background sleep's, then waits for the sleep: a running turn.
_BUSY = ["sh", "-c", "sleep 600 & echo $$ $!; wait"]


async def _dies(pid: int) -> None:
    """Return once *pid* has exited (a pidfd: no polling, no sleeping)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


def _pids(channel: RecordingChannel) -> list[int]:
    text = "".join(event.chunk for event in channel.events if event.type == "text_chunk")
    return [int(pid) for pid in text.split()]


@contextlib.contextmanager
def _killed_anyway(channel: RecordingChannel):  # type: ignore[no-untyped-def]
    try:
        yield
    finally:
        for pid in _pids(channel):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@pidfds
async def test_cancel_kills_the_running_command_and_its_children(rt, db_path) -> None:
    channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=CommandAgent(_BUSY))
    with _killed_anyway(channel), trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.say("work")
        await channel.wait_for(lambda: len(_pids(channel)) == 2)
        assert await channel.say("/cancel") == "command"
        await channel.wait_events("cancelled")
        for pid in _pids(channel):
            await _dies(pid)
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "cancel_command")]


@pidfds
async def test_shutdown_kills_the_running_command_and_its_children(db_path, workspace) -> None:
    with trio.fail_after(10):  # a guard against hanging, not a wait
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            channel = RecordingChannel(rt, ChannelConfig(name="ops"), agent=CommandAgent(_BUSY))
            with _killed_anyway(channel):
                await channel.say("work")
                await channel.wait_for(lambda: len(_pids(channel)) == 2)
        with _killed_anyway(channel):
            for pid in _pids(channel):
                await _dies(pid)
    assert rows(db_path, "SELECT status, reason FROM turns") == [("cancelled", "shutdown")]


async def test_a_failing_command_fails_its_turn_and_the_next_one_runs(rt, db_path) -> None:
    code = ("import sys\n"
            "if sys.stdin.read().endswith('fail'):\n"
            "    sys.stdout.buffer.write(b'half \\xff'); sys.stderr.write('x' * 300000 + 'boom')\n"
            "    sys.exit(3)\n"
            "sys.stdout.buffer.write(b'ok \\xff')\n")
    channel = RecordingChannel(rt, ChannelConfig(name="ops"),
                               agent=CommandAgent([sys.executable, "-c", code]))
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await channel.say("fail")
        await channel.wait_events("failed")
        error = channel.events[-1].error
        assert error.startswith(f"AgentError: {os.path.basename(sys.executable)} exited with "
                                f"code 3; stderr: ")
        assert error.endswith("xboom")
        await channel.say("fine")
        await channel.wait_events("completed")
        await channel.wait_outbounds(1)
        await channel.wait_idle()
    assert channel.messages() == ["ok \ufffd"]
    assert [status for status, in rows(db_path, "SELECT status FROM turns ORDER BY rowid")] == [
        "failed", "completed"]
