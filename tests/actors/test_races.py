"""Interleavings at the ``await`` points of the delivery path, forced deterministically.

Each test puts one task between a check and the act that relies on it (a writer gate, a wrapped
``rt.store.commit`` or ``rt.store.read``, a stalled route) and checks what a user sees. Each
failed on the code before its fix.

Tests that must show that something does not stay stuck (a lane on a full ack window) wait for
it under a real-time hang guard: they pass the moment it happens, and fail on the guard when it
never does. (A mock clock does not fit: the runtime's SQLite I/O runs in threads, so a loaded
machine's slow fsync looked like idleness and jumped the clock straight to the guard.)
"""

from __future__ import annotations

import gc
import pathlib

import trio
import trio.testing

import tidings
from tidings.store import InsertRows, OutboxInsert, Transition, queries, transition
from tidings.testing import MemoryRoute, writer_gate

from .conftest import leave_a_queued_row, rows

HANG = 30.0
"""Real seconds a test waits for something that takes milliseconds when it works."""


def _watch_commits(rt, predicate):
    """Wrap ``rt.store.commit``: ``event = watch(name)`` is set when a commit whose ops match
    ``predicate(ops) == name`` is handed over (the caller then parks waiting for it)."""
    real_commit = rt.store.commit
    events: dict[str, trio.Event] = {}

    async def commit(ops, **kwargs):
        name = predicate(ops)
        if name is not None and name in events:
            events[name].set()
        return await real_commit(ops, **kwargs)

    rt.store.commit = commit

    def watch(name: str) -> trio.Event:
        events[name] = trio.Event()
        return events[name]

    return watch


def _outbox_text(ops):
    for op in ops:
        if isinstance(op, OutboxInsert):
            return op.values["text"]
    return None


def _statuses(db_path: pathlib.Path, session_id: str) -> dict[str, str]:
    return dict(rows(db_path, "SELECT text, status FROM outbox WHERE session_id = ? ORDER BY seq",
                     session_id))


# --- the pipeline: a send cancelled while its write is in flight ---------------------------------


async def test_a_send_cancelled_during_its_claimed_write_is_still_delivered_in_order(
        rt, db_path) -> None:
    """A caller cancelled while its (claimed) write is in flight must not release the session's
    reservation and writing count before the write is decided: else a second send is also
    written claimed, replaces the first in the lane's ``held`` slot, and the first stays
    ``sending``, never delivered (as it was before the pipeline settled it in the write's
    callbacks)."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    watch = _watch_commits(rt, _outbox_text)
    x_written, w_written, x_over = watch("x"), watch("w"), trio.Event()
    handles = {}
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                x_scope = trio.CancelScope()

                async def send_x() -> None:
                    with x_scope:  # an idle session: written already claimed
                        await ctx.output.send_text("x")
                    x_over.set()

                async def send_w() -> None:
                    handles["w"] = await ctx.output.send_text("w")

                nursery.start_soon(send_x)
                await x_written.wait()      # x's write is queued behind the gate
                x_scope.cancel()            # its caller goes (a steer, say); the write stays
                await x_over.wait()
                nursery.start_soon(send_w)
                await w_written.wait()
                gate.release()
            assert await handles["w"].wait() == "delivered"
    # x was committed first (lower seq) and belongs to the runtime: delivered, before w.
    assert _statuses(db_path, session_id) == {"x": "sent", "w": "sent"}
    assert route.texts() == ["x", "w"]


# --- idempotency: a repeated key answered with an item nobody resolves --------------------------


async def test_a_repeated_key_whose_delivery_ends_during_the_lookup_resolves(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.stall()
    rt.router.bind(session_id, route)
    real_read = rt.store.read
    later: dict[str, object] = {}

    async def read(fn, *args):
        result = await real_read(fn, *args)
        if fn is queries.find_idempotent and "c" in later:
            # The row was read ``sending``; before the lookup goes on, the delivery ends and
            # nothing holds its item any more.
            route.release()
            assert await later.pop("c").wait() == "delivered"
            gc.collect()
        return result

    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("a", idempotency_key="k")
            first_id = first.delivery_id
            del first  # the caller keeps only the id
            await route.wait_attempted(1)
            later["c"] = await ctx.output.send_text("c")
            rt.store.read = read
            again = await ctx.output.send_text("a again", idempotency_key="k")
            rt.store.read = real_read
            assert again.delivery_id == first_id
            assert (await rt.delivery_status(first_id)).status == "sent"
            # Everything of the session is done: a handle of it must be settled.
            done = await ctx.output.send_text("z")
            assert await done.wait() == "delivered"
            assert again.status == "delivered"
    assert route.texts() == ["a", "c", "z"]


async def test_a_repeated_key_while_recovery_redelivers_its_row_resolves(
        db_path, workspace) -> None:
    with trio.fail_after(30):  # hang guard
        session_id, queued_id = await leave_a_queued_row(db_path, workspace)
        async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
            route = MemoryRoute()
            route.stall()
            rt.router.bind(session_id, route)
            await rt.recover()
            await route.wait_attempted(1)  # the queued row is being delivered again
            async with rt.open_turn(session_id) as ctx:
                again = await ctx.output.send_text("b again", idempotency_key="k")
                assert again.delivery_id == queued_id
                route.release()
                done = await ctx.output.send_text("z")
                assert await done.wait() == "delivered"
            assert route.texts() == ["b", "z"]
            assert again.status == "delivered"


# --- acking routes: the ack window ---------------------------------------------------------------


async def test_an_ack_of_a_recovered_delivery_frees_the_ack_window(
        db_path, workspace) -> None:
    with trio.fail_after(HANG):  # hang guard
        session_id, queued_id = await leave_a_queued_row(db_path, workspace)
        async with tidings.open_runtime(db_path, workspace=workspace, recover="manual") as rt:
            route = MemoryRoute(ack_window=1)
            rt.router.bind(session_id, route)
            await rt.recover()
            await route.wait_delivered(1)
            assert await rt.confirm([queued_id]) == [queued_id]
            async with rt.open_turn(session_id) as ctx:
                await ctx.output.send_text("c")
            await route.wait_delivered(2)  # the window was freed
            assert route.texts() == ["b", "c"]


async def test_an_ack_that_arrives_while_deliver_runs_frees_the_ack_window(
        rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=1)
    route.stall()
    rt.router.bind(session_id, route)
    with trio.fail_after(HANG):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("a")
            await route.wait_attempted(1)  # the client has the frame; deliver() not returned
            assert await rt.confirm([first.delivery_id]) == [first.delivery_id]
            route.release()
            assert await first.wait() == "delivered"
            await route.wait_delivered(1)
            await ctx.output.send_text("b")
        await route.wait_delivered(2)  # the window was freed
    assert route.texts() == ["a", "b"]


def _sent_transitions(ops):
    if ops and all(isinstance(op, Transition) and op.to == "sent" for op in ops):
        return "confirm"
    return None


async def test_an_ack_whose_caller_is_cancelled_still_frees_the_ack_window(
        rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=1)
    rt.router.bind(session_id, route)
    watch = _watch_commits(rt, _sent_transitions)
    with trio.fail_after(HANG):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("a")
            await route.wait_delivered(1)
            submitted, over = watch("confirm"), trio.Event()
            async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                scope = trio.CancelScope()

                async def ack() -> None:
                    with scope:  # the connection that carried the ack goes away
                        await rt.confirm([first.delivery_id])
                    over.set()

                nursery.start_soon(ack)
                await submitted.wait()
                scope.cancel()
                await over.wait()
                gate.release()
            await rt.create_session()  # a later write: the ack's write has committed
            assert (await rt.delivery_status(first.delivery_id)).status == "sent"
            assert await rt.confirm([first.delivery_id]) == []  # the client acks again
            await ctx.output.send_text("b")
        await route.wait_delivered(2)  # the window was freed
    assert route.texts() == ["a", "b"]


async def test_a_send_right_after_an_ack_does_not_overrun_the_ack_window(rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=1)
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("a")
            await route.wait_delivered(1)
            await ctx.output.send_text("y")  # waits in its lane for room in the window
            lane = rt.dispatcher.lane(session_id)
            while lane is None or not lane.waiting:  # observed, not forced: no I/O runs here
                await trio.lowlevel.checkpoint()
                lane = rt.dispatcher.lane(session_id)
            assert await rt.confirm([first.delivery_id]) == [first.delivery_id]
            # No checkpoint between the ack's return and this send's look at the lane.
            await ctx.output.send_text("x")
            await route.wait_delivered(2)
            statuses = _statuses(db_path, session_id)
    assert route.texts()[:2] == ["a", "y"]
    # y is unacked: with a window of 1, x must still wait (queued), not be claimed.
    assert statuses == {"a": "sent", "y": "sending", "x": "queued"}


# --- turns: the begin write ----------------------------------------------------------------------


def _begin_turn(ops):
    if any(isinstance(op, InsertRows) and op.table == "turns" for op in ops):
        return "begin"
    return None


async def test_a_turn_cancelled_while_its_begin_is_written_records_an_end(rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    watch = _watch_commits(rt, _begin_turn)
    begun, over = watch("begin"), trio.Event()
    with trio.fail_after(30):  # hang guard
        async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def turn() -> None:
                with scope:
                    async with rt.open_turn(session_id, turn_id="turn_cancelled"):
                        pass
                over.set()

            nursery.start_soon(turn)
            await begun.wait()
            scope.cancel()  # /cancel (or a steer) while the turn is being opened
            gate.release()  # before waiting: a turn's end is written in a shielded finally
            await over.wait()
        await rt.create_session()  # a later write: the begin has committed
    assert rows(db_path, "SELECT status FROM turns WHERE turn_id = ?", "turn_cancelled") in (
        [], [("cancelled",)])


async def test_a_claim_that_finds_its_row_moved_on_reports_where_it_ended(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.stall()
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard: an unresolved handle would wait for ever
        async with rt.open_turn(session_id) as ctx:
            await ctx.output.send_text("a")
            await route.wait_attempted(1)
            queued = await ctx.output.send_text("b")  # queued behind a, not yet claimed
            # Something else (an operator, another process) ends the row first.
            [moved] = await rt.store.commit([transition(
                queued.delivery_id, "failed", now=rt.store.clock(), error="cancelled by hand")])
            assert moved.applied
            route.release()
            assert await queued.wait() == "failed"
    assert route.texts() == ["a"]


# --- the lane: a delivery handed to a parked lane, not yet taken --------------------------------


def _most_sending_at_once(db_path: pathlib.Path, session_id: str) -> int:
    """Replay the session's events in order: the most rows that were ``sending`` together."""
    sending: set[str] = set()
    most = 0
    for kind, delivery_id in rows(db_path, "SELECT type, delivery_id FROM events "
                                           "WHERE session_id = ? AND delivery_id IS NOT NULL "
                                           "ORDER BY event_seq", session_id):
        if kind == "delivery.sending":
            sending.add(delivery_id)
        elif kind in ("delivery.sent", "delivery.failed", "delivery.unknown"):
            sending.discard(delivery_id)
        most = max(most, len(sending))
    return most


async def _send_two(ctx, texts: list[str], handles: list) -> None:
    """Send *texts* one right after the other (no checkpoint between a return and the next)."""
    for text in texts:
        handles.append(await ctx.output.send_text(text))


async def test_a_send_right_after_one_handed_to_a_parked_lane_waits_its_turn(
        rt, db_path) -> None:
    """A committed delivery posted to a parked lane is handed to its receive at once, and the
    mailbox looks empty until the lane runs. A send written in that window (its sender woken
    by the same batch, and run first: trio orders a batch at random) was written already
    claimed: two ``sending`` rows in one session, and a lane that lost the handed item to a
    crash delivered the later row first (seen in the seeded fault runs). Every round has an
    even chance to hit the window; twelve rounds miss it once in four thousand runs."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    texts: list[str] = []
    with trio.fail_after(HANG):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            for round_ in range(12):
                route.stall()
                x = await ctx.output.send_text(f"x{round_}")  # idle: written claimed
                await route.wait_attempted(len(texts) + 1)    # the lane is inside deliver()
                handles: list = []
                async with writer_gate(rt.store) as gate, trio.open_nursery() as nursery:
                    nursery.start_soon(_send_two, ctx, [f"a{round_}", f"b{round_}"], handles)
                    await trio.testing.wait_all_tasks_blocked()  # a (queued: the lane is
                    # busy) waits at the gate
                    route.release()                              # x delivered; sent held too
                    await trio.testing.wait_all_tasks_blocked()  # the lane parked
                    gate.release()  # one batch: x sent, a committed (handed to the lane)
                for handle in [x, *handles]:
                    assert await handle.wait() == "delivered"
                texts += [f"x{round_}", f"a{round_}", f"b{round_}"]
    assert route.texts() == texts
    assert _most_sending_at_once(db_path, session_id) == 1
