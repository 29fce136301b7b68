"""The send pipeline: behaviour a mutation audit of ``actors/_pipeline.py`` found no test
pinning. Each test names the mutant it kills (a change no other test noticed); each passes on
the real code and failed with that change applied."""

from __future__ import annotations

import trio
import trio.testing

import tidings
from tidings.errors import StoreError
from tidings.store import OutboxInsert
from tidings.testing import MemoryRoute, writer_gate

from .conftest import leave_a_queued_row

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


async def test_a_repeated_key_whose_first_write_failed_writes_its_own_row(rt) -> None:
    """Two sends of one idempotency key, the second made while the first's write is in
    flight: it waits for that write, and when the store refuses it (nothing written), the key
    is free and the second send writes and delivers its own row. Mutant: the second send
    handed the first one's delivery whatever its write's outcome (a delivery never written:
    ``delivery_status`` knows nothing of it and its ``wait()`` never ends)."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    real_commit = rt.store.commit
    go = trio.Event()
    refused = []

    async def commit(ops, **kwargs):
        if not refused and any(isinstance(op, OutboxInsert) for op in ops):
            refused.append(ops)
            await go.wait()
            error = StoreError("refused for the test: nothing written")
            kwargs["on_error"](error)
            raise error
        return await real_commit(ops, **kwargs)

    rt.store.commit = commit
    outcomes: dict[str, object] = {}

    async def send(name: str, ctx) -> None:
        try:
            outcomes[name] = await ctx.output.send_text(name, idempotency_key="k")
        except StoreError as exc:
            outcomes[name] = exc

    with trio.fail_after(HANG):
        async with rt.open_turn(session_id) as ctx, trio.open_nursery() as nursery:
            nursery.start_soon(send, "first", ctx)
            while not refused:  # its write is handed over (and held)
                await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(send, "second", ctx)
            await trio.testing.wait_all_tasks_blocked()  # waiting for the first's outcome
            go.set()
    assert isinstance(outcomes["first"], StoreError)
    second = outcomes["second"]
    assert (await rt.delivery_status(second.delivery_id)).text == "second"
    with trio.fail_after(HANG):
        assert await second.wait() == "delivered"
    assert route.texts() == ["second"]


async def test_a_repeated_key_of_a_queued_row_hands_back_a_handle_not_yet_ended(
        db_path, workspace) -> None:
    """A retried send (its key finds a ``queued`` row an earlier process left) gets a handle
    whose status is not a terminal one and that ends when the row is delivered. Mutant: the
    look again after registering the item resolved it with whatever status the row had
    (``queued``: a handle reporting a status no handle has)."""
    with trio.fail_after(HANG):
        session_id, queued_id = await leave_a_queued_row(db_path, workspace)
        async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
            route = MemoryRoute()
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                again = await ctx.output.send_text("b, retried", idempotency_key="k")
            assert (again.delivery_id, again.status) == (queued_id, "scheduled")
            await rt.recover()
            assert await again.wait() == "delivered"
