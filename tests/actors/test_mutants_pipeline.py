"""The send pipeline: behaviour a mutation audit of ``actors/_pipeline.py`` found no test
pinning. Each test names the mutant it kills (a change no other test noticed); each passes on
the real code and failed with that change applied."""

from __future__ import annotations

import trio
import trio.testing

from tidings.testing import MemoryRoute, writer_gate

HANG = 30.0
"""Real-time hang guard: these runtimes run on trio's real clock."""


async def test_a_send_is_not_written_claimed_past_one_still_being_written(rt) -> None:
    """A send whose write is still in flight (queued: no route was bound when it was built)
    and a later send of the session once a route is bound: the later one is not written
    claimed, so it cannot overtake the earlier one. Mutant: a send written claimed whatever
    the session had in flight (the lane, knowing nothing of the earlier row yet, delivered
    the later one first)."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    handles: dict[str, object] = {}

    async def send(text: str) -> None:
        handles[text] = await rt.notify(session_id, text)

    with trio.fail_after(HANG):
        async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
            nursery.start_soon(send, "first")  # built with no route: queued
            while not rt.pipeline._writing[session_id]:  # its write is handed over
                await trio.testing.wait_all_tasks_blocked()
            rt.router.bind(session_id, route)
            nursery.start_soon(send, "second")
            await trio.testing.wait_all_tasks_blocked()
            gate.release()
        assert [await handles[t].wait() for t in ("first", "second")] == ["delivered"] * 2
    assert route.texts() == ["first", "second"]
