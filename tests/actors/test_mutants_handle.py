"""Delivery handles: behaviour a mutation audit of ``actors/_handle.py`` found no test
pinning. Each test names the mutant it kills (a change no other test noticed); it passes on
the real code and failed with that change applied."""

from __future__ import annotations

import pytest
import trio

import tidings
from tidings.errors import RuntimeClosedError
from tidings.testing import MemoryRoute

HANG = 30.0
"""Real-time hang guard: these runtimes run on trio's real clock."""


async def test_waiting_after_the_runtime_stopped_raises_at_once(db_path, workspace) -> None:
    """A handle whose delivery had not ended when its runtime stopped: a ``wait()`` begun
    after the stop raises :class:`RuntimeClosedError` at once, as one begun before it did.
    Mutant: the close woke the waiters of the moment but was not remembered (a later
    ``wait()`` waited for ever)."""
    route = MemoryRoute()
    route.stall()
    with trio.fail_after(HANG):
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                await ctx.output.send_text("a")
                await route.wait_attempted(1)
                queued = await ctx.output.send_text("b")  # never taken: queued at the stop
    with trio.fail_after(5):  # the mutant's wait never ended
        for _ in range(2):
            with pytest.raises(RuntimeClosedError, match="stopped before delivery"):
                await queued.wait()
