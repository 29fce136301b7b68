"""CommandAgent's wait for the command's exit where there are no pidfds (``os.waitid`` with
``WNOWAIT`` in a worker thread: macOS, the BSDs, a kernel or sandbox without pidfd_open)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from tidings.channels import CommandAgent, _command_agent
from tidings.errors import AgentError

from ..real_time import fail_after_real
from .test_command_agent_leftovers import _state

waitid = pytest.mark.skipif(not hasattr(os, "waitid") or not hasattr(os, "WNOWAIT"),
                            reason="the waitid fallback")


@waitid
async def test_the_waitid_wait_does_not_take_a_worker_thread_from_the_runtime(
        fake_turn: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # The thread waiting for the command's exit came from trio's default limiter (40 threads,
    # shared with the runtime's event reads and source resolving) for as long as the command
    # ran: 40 running commands starved them all. One thread here stands for the 40.
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    trio.to_thread.current_default_thread_limiter().total_tokens = 1
    turn = fake_turn("", text="")
    with trio.fail_after(10):  # a guard against hanging, not a wait
        async with trio.open_nursery() as nursery:
            nursery.start_soon(CommandAgent(["sh", "-c", "echo up; exec sleep 1000"]).run, turn)
            await turn.chunk_seen.wait()
            await trio.testing.wait_all_tasks_blocked()  # the agent waits for the exit
            assert await trio.to_thread.run_sync(int, "7") == 7
            nursery.cancel_scope.cancel()  # kills and reaps the command


_pidfd_open = getattr(os, "pidfd_open", None)  # the tests' own waits, before it is removed


@waitid
@pytest.mark.skipif(_pidfd_open is None, reason="the test waits on a pidfd (Linux)")
async def test_the_waitid_wait_ends_the_turn_when_the_command_exits(
        fake_turn: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # As with pidfds: the background child that holds stdout is killed at the command's exit
    # (not waited for), and the exit code and stderr are the command's.
    monkeypatch.delattr(os, "pidfd_open")
    turn = fake_turn("", text="")
    with trio.fail_after(10), pytest.raises(AgentError) as info:  # a guard, not a wait
        await CommandAgent(["sh", "-c", "sleep 1000 & echo $!; echo oops >&2; exit 3"]).run(turn)
    assert str(info.value).endswith("exited with code 3; stderr: oops")
    assert _pidfd_open is not None
    try:
        fd = _pidfd_open(int(turn.reply.split()[0]))  # not our child: it dies or is gone
    except ProcessLookupError:
        return  # killed and reaped already
    try:
        with trio.fail_after(10):
            await trio.lowlevel.wait_readable(fd)
    finally:
        os.close(fd)


@waitid
async def test_the_waitid_wait_cancelled_kills_and_reaps_the_command(
        fake_turn: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(os, "pidfd_open", raising=False)
    pids: list[int] = []
    turn = fake_turn("", text="")
    with trio.fail_after(10), trio.CancelScope() as scope:  # a guard against hanging
        turn.on_chunk = lambda text: (pids.append(int(text.split()[0])), scope.cancel())
        await CommandAgent(["sh", "-c", "echo $$; exec sleep 1000"]).run(turn)
    assert scope.cancelled_caught
    assert _state(pids[0]) is None  # killed and reaped, not a zombie


async def test_a_huge_prompt_nobody_reads_does_not_fail_the_turn(
        fake_turn: Callable[..., Any]) -> None:
    # The command exits without reading it while a background child still holds stdin: the
    # feed ends when the turn closes stdin at the exit, not with an error.
    turn = fake_turn("p" * (8 << 20), text="")
    with trio.fail_after(10):  # a guard against hanging, not a wait
        await CommandAgent(["sh", "-c", "sleep 1000 & echo hi"]).run(turn)
    assert turn.reply == "hi\n"


@pytest.mark.skipif(_pidfd_open is None, reason="the test waits on a pidfd (Linux)")
async def test_a_command_that_exited_in_time_is_not_failed_by_its_timeout_while_draining(
        fake_turn: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
        mock_clock: trio.testing.MockClock) -> None:
    # It exited within its timeout, leaving a process of its own session holding stdout: the
    # turn waits EXIT_DRAIN for that pipe, and the timeout ran out meanwhile, so the turn
    # failed with "ran past its timeout" (its reply thrown away) though the command had not.
    monkeypatch.setattr(_command_agent, "EXIT_DRAIN", 10)
    code = ("import os, subprocess; child = subprocess.Popen(['sleep', '1000'], "
            "start_new_session=True); print(os.getpid(), child.pid, flush=True); print('done')")
    turn = fake_turn("", text="")
    outcome: list[str] = []

    async def run() -> None:
        try:
            await CommandAgent([sys.executable, "-c", code], timeout=5).run(turn)
            outcome.append("ok")
        except AgentError as exc:
            outcome.append(str(exc))

    try:
        # The waits are on a real process; mock_clock moves only at jump(): a real-time guard.
        with fail_after_real(60):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(run)
                while "done" not in turn.reply:  # the clock stands still: no timeout meanwhile
                    await turn.chunk_seen.wait()
                    turn.chunk_seen = trio.Event()
                assert _pidfd_open is not None
                fd = _pidfd_open(int(turn.reply.split()[0]))  # the command (our unreaped child)
                try:
                    await trio.lowlevel.wait_readable(fd)  # it exited
                finally:
                    os.close(fd)
                await trio.testing.wait_all_tasks_blocked()  # the turn waits for the held pipe
                mock_clock.jump(6)  # past the timeout, not past EXIT_DRAIN
                await trio.testing.wait_all_tasks_blocked()
                mock_clock.jump(5)  # past EXIT_DRAIN
    finally:
        with contextlib.suppress(ProcessLookupError, IndexError, ValueError):
            os.kill(int(turn.reply.split()[1]), signal.SIGKILL)
    assert outcome == ["ok"]
    assert turn.reply.split()[2:] == ["done"]
