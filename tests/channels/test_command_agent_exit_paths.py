"""CommandAgent's wait for the command's exit where there are no pidfds (``os.waitid`` with
``WNOWAIT`` in a worker thread: macOS, the BSDs, a kernel or sandbox without pidfd_open)."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from tidings.channels import CommandAgent

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
