"""More interleavings at ``await`` points, forced deterministically: recovery, reconcile,
acking, and the channels.

Each test parks one task between a check (or a write) and the act that relies on it (a writer
gate, a wrapped ``rt.store.commit``), then checks what a user sees.
"""

from __future__ import annotations

import trio

import tidings
from tidings.store import Call, Transition
from tidings.testing import MemoryRoute, writer_gate

from ..until import until


def _watch_transitions(rt, to: str):
    """Wrap ``rt.store.commit``: the returned event is set when a commit carrying a transition
    into *to* is handed over (its caller then parks waiting for the write)."""
    real_commit = rt.store.commit
    handed = trio.Event()

    async def commit(ops, **kwargs):
        if any(isinstance(op, Transition) and op.to == to for op in ops):
            handed.set()
        return await real_commit(ops, **kwargs)

    rt.store.commit = commit
    return handed


async def _cancel_during_write(rt, call, handed: trio.Event) -> None:
    """Run ``await call()`` in a scope; once its write is handed to the (gated) writer, cancel
    the caller, then let the write commit."""
    async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
        scope = trio.CancelScope()
        over = trio.Event()

        async def caller() -> None:
            with scope:
                await call()
            over.set()

        nursery.start_soon(caller)
        await handed.wait()
        scope.cancel()
        await over.wait()
        gate.release()
    await rt.store.commit([Call(_noop)])  # writes commit in order: the cancelled one is in


def _noop(conn) -> None:
    pass


_REQUEUED = ("queued", "sending", "sent")
"""Where a re-queued row can be when its test looks: its lane is kicked as the write commits."""


# --- acking: requeue cancelled while its write is in flight -------------------------------------


async def test_a_requeue_cancelled_during_its_write_still_reaches_the_lane(rt) -> None:
    with trio.fail_after(30):  # hang guard
        session_id = await rt.create_session(channel="web")
        async with rt.open_turn(session_id) as ctx:
            lost = await ctx.output.send_text("lost")  # no route bound: unrouted
            assert await lost.wait() == "unrouted"
            route = MemoryRoute()
            rt.router.bind(session_id, route)
            handed = _watch_transitions(rt, "queued")
            await _cancel_during_write(
                rt, lambda: rt.requeue(session_id, [lost.delivery_id]), handed)
            # The requeue committed (the kicked lane may already be claiming the row).
            assert (await rt.delivery_status(lost.delivery_id)).status in _REQUEUED
            later = await ctx.output.send_text("later")
            assert await later.wait() == "delivered"
        # Per-session order: the re-queued row (lower seq) goes before the later one.
        assert route.texts() == ["lost", "later"]
        assert (await rt.delivery_status(lost.delivery_id)).status == "sent"


# --- reconcile: a cancelled reconcile pass re-queues a row nobody kicks ---------------------------


async def test_a_reconcile_cancelled_during_its_write_still_reaches_the_lane(
        db_path, workspace, leftovers, reconciling_route) -> None:
    left = await leftovers(queued=0, progress=0)
    route = reconciling_route()
    with trio.fail_after(30):  # hang guard
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        scan_interval=3600) as rt:
            rt.router.bind(left.session_id, route)
            await route.wait_asked(1)  # the bind's reconcile: undecided for now
            # Wait for that pass to end (its report is counted once it let go of the scanner).
            # Still running, it could take the "missing" below and re-queue the row itself,
            # and the cancel would hit a reconcile still waiting for its turn: no race left.
            await until(lambda: rt.scanner.statistics().totals.undecided == 1)
            route.answers[left.in_flight] = "missing"
            handed = _watch_transitions(rt, "queued")
            await _cancel_during_write(
                rt, lambda: rt.scanner.reconcile([left.session_id]), handed)
            assert (await rt.delivery_status(left.in_flight)).status in _REQUEUED
            async with rt.open_turn(left.session_id) as ctx:
                later = await ctx.output.send_text("later")
                assert await later.wait() == "delivered"
            status = (await rt.delivery_status(left.in_flight)).status
    assert route.texts() == ["in flight", "later"]
    assert status == "sent"


# --- recovery: a route bound while a recovery pass runs is asked by neither -------------------


async def test_a_route_bound_during_recovery_is_reconciled_soon(
        db_path, workspace, leftovers, reconciling_route, wait_for_event,
        autojump_clock) -> None:
    from tidings.store import recovery

    left = await leftovers(queued=0, progress=0)
    route = reconciling_route({left.in_flight: "sent"})
    with trio.fail_after(3600):  # hang guard (mock clock)
        async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                        scan_interval=3600) as rt:
            real_read = rt.store.read
            bound: list[object] = []

            async def read(fn, *args):
                result = await real_read(fn, *args)
                if fn is recovery.queued_heads and not bound:  # reconcile is behind us
                    bound.append(rt.router.bind(left.session_id, route))
                return result

            rt.store.read = read
            await rt.recover()
            rt.store.read = real_read
            with trio.move_on_after(600):  # the bind's wake takes milliseconds
                await wait_for_event(rt, left.in_flight, "delivery.reconciled")
            status = (await rt.delivery_status(left.in_flight)).status
    assert route.asked == [[left.in_flight]]
    assert status == "sent"
