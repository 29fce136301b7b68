"""``rt.prune(older_than=...)``: retention on a live runtime."""

from __future__ import annotations

import functools
import gc
import math
import sqlite3
import threading
import time
from collections.abc import AsyncIterator

import pytest
import trio
import trio.testing

import tidings
from tidings.actors import PruneReport, Runtime
from tidings.actors import _retention as retention_module
from tidings.channels import ChannelConfig
from tidings.errors import (
    DeliveryNotFoundError,
    EventsPrunedError,
    RuntimeClosedError,
    ValidationError,
)
from tidings.store import Call, queries
from tidings.store import _prune as prune_module
from tidings.testing import MemoryRoute, database_violations, route_violations

from ..channels.conftest import GatedAgent, RecordingChannel
from ..database_template import fresh_database
from .conftest import leave_a_queued_row


@pytest.fixture
def clock() -> list[float]:
    """The runtime's wall clock (``store.clock``), moved by hand."""
    return [1_000.0]


@pytest.fixture
async def rt(db_path, workspace, clock) -> AsyncIterator[Runtime]:
    async with tidings.open_runtime(fresh_database(db_path), workspace=workspace,
                                    clock=lambda: clock[0]) as runtime:
        yield runtime


@pytest.mark.parametrize("value", [-1, -0.5, math.nan, math.inf, True, False, "30d", None,
                                   10**400, -10**400, 10**5000, [1]],
                         ids=["-1", "-0.5", "nan", "inf", "True", "False", "str", "None",
                              "10**400", "-10**400", "10**5000", "list"])
async def test_a_bad_retention_is_refused_naming_older_than(rt, value) -> None:
    session_id = await rt.create_session()
    async with rt.open_turn(session_id) as ctx:
        await ctx.output.send_text("kept")
    with pytest.raises(ValidationError) as caught:
        await rt.prune(older_than=value)
    assert caught.value.field == "older_than"
    assert "finite number of seconds >= 0" in str(caught.value)
    assert len(str(caught.value)) < 200
    assert len(await rt.deliveries(session_id)) == 1


async def test_a_prune_deletes_old_final_deliveries_and_frees_their_keys(rt, clock) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        old = await ctx.output.send_text("old", idempotency_key="k")
        assert await old.wait() == "delivered"
        assert (await ctx.output.send_text("again", idempotency_key="k")).delivery_id \
            == old.delivery_id  # remembered while the row is kept
    clock[0] += 100
    history = await rt.history(session_id)
    async with rt.open_turn(session_id) as ctx:
        young = await ctx.output.send_text("young")
        assert await young.wait() == "delivered"

    assert await rt.prune(older_than=200) == PruneReport()  # nothing that old yet
    report = await rt.prune(older_than=50)

    assert (report.deliveries, report.work_items) == (1, 1)
    assert report.events >= 3  # queued, sending, sent at least
    with pytest.raises(DeliveryNotFoundError) as caught:
        await rt.delivery_status(old.delivery_id)
    assert isinstance(caught.value, LookupError)
    assert (await rt.delivery_status(young.delivery_id)).status == "sent"
    assert (await rt.history(session_id))[:len(history)] == history
    assert len(await rt.history(session_id)) == len(history) + 1
    # the key of a pruned delivery is free again: the same key is a new delivery
    async with rt.open_turn(session_id) as ctx:
        anew = await ctx.output.send_text("anew", idempotency_key="k")
        assert anew.delivery_id != old.delivery_id
        assert await anew.wait() == "delivered"
    assert [d.text for d in await rt.deliveries(session_id)] == ["young", "anew"]


async def test_catch_up_from_an_older_cursor_still_works(rt, clock) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        for text in ("a", "b"):
            assert await (await ctx.output.send_text(text)).wait() == "delivered"
        clock[0] += 100
        for text in ("c", "d"):
            assert await (await ctx.output.send_text(text)).wait() == "delivered"
    assert (await rt.prune(older_than=50)).deliveries == 2
    rows = await rt.stored_deliveries(session_id, after_seq=0)
    assert [(row.outbound.seq, row.outbound.text, row.status) for row in rows] == [
        (3, "c", "sent"), (4, "d", "sent")]
    assert await rt.last_seq(session_id) == 4
    assert await rt.last_handed_seq(session_id) == 4


async def test_a_feed_reader_behind_a_prune_is_told_and_can_go_on_from_the_horizon(
        rt, clock, autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        assert await (await ctx.output.send_text("old")).wait() == "delivered"
    behind = rt.events(after_seq=0)
    read = [event.seq async for event in _until_empty(behind)]
    async with rt.open_turn(session_id) as ctx:  # old too, and never read by *behind*
        assert await (await ctx.output.send_text("old, unread")).wait() == "delivered"
    clock[0] += 100
    async with rt.open_turn(session_id) as ctx:
        assert await (await ctx.output.send_text("new")).wait() == "delivered"
    everything = [event.seq async for event in _until_empty(rt.events(after_seq=0))]
    assert (await rt.prune(older_than=50)).events > 0
    with pytest.raises(EventsPrunedError) as caught:
        await behind.__anext__()
    assert caught.value.field == "after_seq"
    assert caught.value.after_seq == read[-1]
    horizon = caught.value.first_kept
    assert horizon - 1 > read[-1]
    with pytest.raises(EventsPrunedError):  # so is a new feed from a cursor so old
        await rt.events(after_seq=read[-1]).__anext__()
    after = [event async for event in _until_empty(rt.events(after_seq=horizon - 1))]
    assert [event.seq for event in after] == [seq for seq in everything if seq >= horizon]
    assert [event.type for event in after][-2:] == ["delivery.sent", "turn.completed"]


async def _until_empty(feed) -> AsyncIterator:
    """The events the feed has now (it would wait for the next commit after them)."""
    while True:
        with trio.move_on_after(1) as waited:
            event = await feed.__anext__()
        if waited.cancelled_caught:
            return
        yield event


async def test_a_prune_while_sends_flow_never_touches_what_is_in_flight(
        rt, clock, quick_autojump_clock) -> None:
    """Sends of five sessions go to routes that take a while, while prunes with no retention
    at all run again and again: every send is delivered (the rows a lane holds are never
    final, so never pruned), and what is left at the end is exactly the final rows none of
    the prunes reached, which the last one takes."""
    sessions = [await rt.create_session(channel="web") for _ in range(5)]
    routes = [MemoryRoute(latency=0.001) for _ in sessions]
    for session_id, route in zip(sessions, routes, strict=True):
        rt.router.bind(session_id, route)
    handles = []
    pruned = PruneReport()
    checks: list[int] = []

    async def send(session_id: str) -> None:
        async with rt.open_turn(session_id) as ctx:
            for n in range(40):
                handles.append(await ctx.output.send_text(f"{n}", idempotency_key=f"k{n}"))
                clock[0] += 0.01
                await trio.lowlevel.checkpoint()

    async def prune_while_sending(done: trio.Event) -> None:
        nonlocal pruned
        while not done.is_set():
            clock[0] += 0.01  # what was updated before now is older than no retention
            pruned += await rt.prune(older_than=0)
            held = _held_by_lanes(rt)  # (no checkpoint since the prune's commit)
            stored = {d.delivery_id for d in await rt.deliveries()}
            assert held <= stored, "a lane holds a row a prune deleted"
            checks.append(len(held))
            await trio.sleep(0.002)

    with trio.fail_after(60):
        done = trio.Event()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(prune_while_sending, done)
            async with trio.open_nursery() as senders:
                for session_id in sessions:
                    senders.start_soon(send, session_id)
            assert [await handle.wait() for handle in handles] == ["delivered"] * 200
            done.set()
    assert pruned.deliveries > 0  # some went while others were in flight
    assert any(checks)
    for route in routes:
        assert [out.text for out in route.delivered] == [f"{n}" for n in range(40)]
    clock[0] += 1
    last = await rt.prune(older_than=0)
    assert pruned.deliveries + last.deliveries == 200
    assert pruned.work_items + last.work_items == 200
    assert await rt.deliveries() == []
    assert _held_by_lanes(rt) == set()
    stats = rt.statistics().dispatch
    assert (stats.delivered, stats.failed, stats.queued_bytes) == (200, 0, 0)
    # the lanes go on from where they were: the next sends are delivered, in order
    async with rt.open_turn(sessions[0]) as ctx:
        again = await ctx.output.send_text("after", idempotency_key="k0")
        assert await again.wait() == "delivered"
    assert routes[0].delivered[-1].text == "after"
    assert (await rt.delivery_status(again.delivery_id)).seq == 41


def _held_by_lanes(rt: Runtime) -> set[str]:
    """The ids of every row a lane holds in memory: to deliver, being delivered, delivered
    with ``sent`` not yet written, or waiting for an ack."""
    ids: set[str] = set()
    for lane in rt.dispatcher.lanes.values():
        items = [*lane.backlog, *lane.unflushed, *lane.unacked.values()]
        items += [item for item in (lane.current, lane.held) if item is not None]
        ids.update(item.delivery_id for item in items)
    return ids


async def test_a_stopped_runtime_refuses_to_prune(db_path, workspace) -> None:
    async with tidings.open_runtime(fresh_database(db_path), workspace=workspace) as rt:
        pass
    with pytest.raises(RuntimeClosedError):
        await rt.prune(older_than=0)


async def test_the_testing_invariants_hold_on_a_pruned_database(rt, clock) -> None:
    """tidings.testing's checks take a pruned database for what it is: seqs with the pruned
    deliveries' gaps, routes that accepted rows that are gone."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        for n in range(3):
            assert await (await ctx.output.send_text(f"old {n}")).wait() == "delivered"
        clock[0] += 100
        rt.router.unbind(rt.router.bind(session_id, route))
        assert await (await ctx.output.send_text("kept")).wait() == "unrouted"
        rt.router.bind(session_id, route)
        clock[0] += 1
        assert await (await ctx.output.send_text("new")).wait() == "delivered"
    assert (await rt.prune(older_than=50)).deliveries == 3
    assert [d.seq for d in await rt.deliveries(session_id)] == [4, 5]
    assert database_violations(rt.store.path) == []
    assert route_violations({session_id: route}, db_path=rt.store.path) == []


async def test_the_route_invariants_hold_once_a_requeued_delivery_is_pruned(rt, clock) -> None:
    """A delivery re-queued (its client lost it: unknown, then requeue) reaches its route
    twice, which route_violations allows for a row with a delivery.requeued event. Once a
    prune deletes the row with its events, nothing says it was re-queued: its second arrival
    was taken for a duplicate, and its old seq after a newer one for disorder."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(ack_window=1)
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        lost = await ctx.output.send_text("lost once")
        await route.wait_delivered(1)
        assert await rt.abandon_unacked(session_id) == [lost.delivery_id]
        assert await rt.requeue(session_id, [lost.delivery_id]) == [lost.delivery_id]
        await route.wait_delivered(2)
        assert await rt.confirm([lost.delivery_id]) == [lost.delivery_id]
        assert (await rt.delivery_status(lost.delivery_id)).status == "sent"
    assert route_violations({session_id: route}, db_path=rt.store.path) == []
    clock[0] += 100
    assert (await rt.prune(older_than=50)).deliveries == 1
    assert database_violations(rt.store.path) == []
    assert route_violations({session_id: route}, db_path=rt.store.path) == []


async def test_a_prune_the_runtime_stops_under_raises_runtime_closed(
        db_path, workspace, clock, autojump_clock, monkeypatch) -> None:
    """A prune still going (chunk after chunk) when its runtime stops: the chunk it sends once
    the writer has closed was refused with the store's StoreClosedError, where rt.prune says
    RuntimeClosedError once the runtime is stopping (a host whose prune loop ends on that,
    as serve's retention child's does, got a store error instead). It raises
    RuntimeClosedError, and the chunks committed before stay."""
    monkeypatch.setattr(prune_module, "DELIVERIES_PER_STEP", 1)
    caught: list[BaseException] = []
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery, tidings.open_runtime(
                fresh_database(db_path), workspace=workspace, clock=lambda: clock[0]) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, MemoryRoute())
            async with rt.open_turn(session_id) as ctx:
                for n in range(3):
                    assert await (await ctx.output.send_text(f"{n}")).wait() == "delivered"
            clock[0] += 100
            commit = rt.store.commit
            first = trio.Event()

            async def chunk_by_chunk(ops, **kwargs):
                if first.is_set():  # the next chunk reaches the writer once it has closed
                    while not rt.bus.closed:  # woken by each commit, and by the close
                        await rt.bus.wait_past(rt.bus.version)
                results = await commit(ops, **kwargs)
                first.set()
                return results

            rt.store.commit = chunk_by_chunk

            async def prune() -> None:
                try:
                    await rt.prune(older_than=50)
                except Exception as exc:  # noqa: BLE001 - asserted below
                    caught.append(exc)

            nursery.start_soon(prune)
            await first.wait()  # one chunk committed; the runtime stops now
    assert [type(exc) for exc in caught] == [RuntimeClosedError]
    assert len(rows := _outbox_texts(db_path)) == 2, rows  # the first chunk's delivery went
    assert database_violations(db_path) == []


def _outbox_texts(db_path) -> list[str]:
    conn = sqlite3.connect(db_path)
    try:
        return [row[0] for row in conn.execute("SELECT text FROM outbox ORDER BY seq")]
    finally:
        conn.close()


@pytest.mark.parametrize("when", ["reading the row", "registered"])
async def test_a_key_whose_delivery_is_pruned_while_a_send_looks_it_up_is_free(
        db_path, workspace, autojump_clock, when) -> None:
    """A send finds its key on a ``queued`` row no lane holds yet (left by the last process),
    reads the row, registers an item for it and looks the key up once more; meanwhile the row
    is delivered, ends ``sent`` and a prune with no retention deletes it. While it reads the
    row: the key is then free, as after any prune, and the send is a new delivery, not the
    old one answered with the status it had when first read (a handle whose wait() said
    'queued'). Once it has registered its item: the lane resolved that item, and the send is
    the old delivery, delivered, as without the prune."""
    session_id, queued_id = await leave_a_queued_row(db_path, workspace)  # key "k"
    clock = [time.time() + 10]
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    clock=lambda: clock[0]) as rt:
        route = MemoryRoute()
        read = rt.store.read
        armed = [True]
        lookups = []

        async def meanwhile() -> None:
            rt.router.bind(session_id, route)
            await rt.recover()
            await route.wait_delivered(1)
            while (await rt.delivery_status(queued_id)).status != "sent":
                await trio.testing.wait_all_tasks_blocked()
            gc.collect()  # the lane's item of it is gone with the lane's reference
            clock[0] += 1
            assert (await rt.prune(older_than=0)).deliveries == 1

        def hooked(fn) -> bool:
            if when == "reading the row":
                return (isinstance(fn, functools.partial) and fn.func is queries.open_outbox_rows
                        and fn.keywords.get("limit") == 1)
            if fn is queries.find_idempotent:
                lookups.append(fn)
            return len(lookups) == 2  # the look once more, after the registration

        async def read_after_the_prune(fn, *args):
            if armed[0] and hooked(fn):
                armed[0] = False
                await meanwhile()
            return await read(fn, *args)

        rt.store.read = read_after_the_prune
        with trio.fail_after(30):
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_text("b again", idempotency_key="k")
                assert not armed[0]
                assert await handle.wait() == "delivered"
        if when == "reading the row":
            assert handle.delivery_id != queued_id
            assert [out.text for out in route.delivered] == ["b", "b again"]
        else:
            assert handle.delivery_id == queued_id
            assert [out.text for out in route.delivered] == ["b"]


@pytest.mark.parametrize("then", ["nothing", "another send of the key"])
async def test_a_key_whose_delivery_ends_and_is_pruned_right_after_its_row_is_read_is_free(
        db_path, workspace, autojump_clock, then) -> None:
    """As above, but the row is read ``queued`` and only then (before the send registers its
    item, so no lane ever holds that item) delivered by its lane, ended ``sent`` and pruned:
    the look once more finds no row. The send's item was waited on for ever (no lane would
    resolve it, no row was left to say how it ended); the key is free, as after any prune,
    and the send is a new delivery. Or another send took the freed key meanwhile: the look
    once more found that one's row, not yet ended, and the send answered with the pruned
    delivery's item, again for ever; it is that other send's delivery now."""
    session_id, queued_id = await leave_a_queued_row(db_path, workspace)  # key "k"
    clock = [time.time() + 10]
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    clock=lambda: clock[0]) as rt:
        route = MemoryRoute()
        read = rt.store.read
        armed = [True]

        async def read_then_deliver_and_prune(fn, *args):
            result = await read(fn, *args)
            if (armed[0] and isinstance(fn, functools.partial)
                    and fn.func is queries.open_outbox_rows and fn.keywords.get("limit") == 1):
                armed[0] = False
                assert [row.status for row in result] == ["queued"]
                rt.router.bind(session_id, route)
                await rt.recover()
                await route.wait_delivered(1)
                while (await rt.delivery_status(queued_id)).status != "sent":
                    await trio.testing.wait_all_tasks_blocked()
                gc.collect()  # the lane's item of it is gone with the lane's reference
                clock[0] += 1
                assert (await rt.prune(older_than=0)).deliveries == 1
                if then == "another send of the key":
                    route.stall()  # its row stays sending while the first send looks again
                    other.append(await turn[0].output.send_text("b other", idempotency_key="k"))
            return result

        rt.store.read = read_then_deliver_and_prune
        turn, other = [], []
        with trio.fail_after(30):
            async with rt.open_turn(session_id) as ctx:
                turn.append(ctx)
                handle = await ctx.output.send_text("b again", idempotency_key="k")
                assert not armed[0]
                route.release()
                assert await handle.wait() == "delivered"
        assert handle.delivery_id != queued_id
        if then == "nothing":
            assert [out.text for out in route.delivered] == ["b", "b again"]
        else:
            assert handle.delivery_id == other[0].delivery_id
            assert [out.text for out in route.delivered] == ["b", "b other"]


async def test_on_chunk_is_told_each_committed_chunk(rt, clock, monkeypatch) -> None:
    """What a caller whose prune may be cut short (serve's retention) counts with: each
    chunk's counts as it commits, adding up to the report."""
    monkeypatch.setattr(prune_module, "DELIVERIES_PER_STEP", 1)
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        for n in range(3):
            assert await (await ctx.output.send_text(f"{n}")).wait() == "delivered"
    clock[0] += 100
    chunks: list[PruneReport] = []
    report = await rt.prune(older_than=50, on_chunk=chunks.append)
    assert report.deliveries == 3
    assert [chunk.deliveries for chunk in chunks][:3] == [1, 1, 1]
    assert sum(chunks, PruneReport()) == report


async def test_a_chunk_that_commits_after_its_prune_was_cancelled_is_still_told(
        rt, clock) -> None:
    """A cancel does not withdraw a write: a prune cancelled while its chunk waited for the
    writer (a stop of serve's retention, with the writer busy) had the chunk commit all the
    same, but on_chunk, called once the caller had the answer, never heard of it, so what the
    caller counted ("so a caller whose prune may be cut short still knows what went") missed
    what went. It is told as the chunk commits, whether or not the caller still waits."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        for n in range(3):
            assert await (await ctx.output.send_text(f"{n}")).wait() == "delivered"
    clock[0] += 100
    entered, gate = threading.Event(), threading.Event()

    def busy(conn: sqlite3.Connection) -> None:  # the writer's thread, inside a batch
        entered.set()
        gate.wait(30)

    busy_done = trio.Event()
    rt.store.commit_nowait([Call(busy)], on_commit=lambda _: busy_done.set(),
                           on_error=lambda _: busy_done.set())
    await trio.to_thread.run_sync(entered.wait, 30)
    chunks: list[PruneReport] = []
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(functools.partial(rt.prune, older_than=50,
                                                 on_chunk=chunks.append))
            await trio.testing.wait_all_tasks_blocked()  # its chunk waits behind busy
            scope.cancel()
    gate.set()
    await rt.store.commit([])  # answered after the chunk's batch
    assert busy_done.is_set()
    assert await rt.deliveries(session_id) == []  # the chunk committed
    assert sum(chunks, PruneReport()).deliveries == 3


async def _async_on_chunk(report: PruneReport) -> None:
    raise AssertionError("never awaited")


class _AsyncCallable:
    async def __call__(self, report: PruneReport) -> None:
        raise AssertionError("never awaited")


def _no_argument() -> None:
    raise AssertionError("never called")


def _two_arguments(report: PruneReport, total: PruneReport) -> None:
    raise AssertionError("never called")


@pytest.mark.parametrize(("on_chunk", "said"), [
    ("chunks", "callable"), (0, "callable"), (_async_on_chunk, "callable"),
    (_AsyncCallable(), "callable"), (functools.partial(_AsyncCallable()), "callable"),
    (_no_argument, "one argument"), (_two_arguments, "one argument"),
    (lambda *, report: None, "one argument")],
    ids=["str", "int", "async def", "async __call__", "partial of async __call__",
         "no argument", "two arguments", "keyword only"])
async def test_an_on_chunk_it_cannot_call_with_the_report_is_refused_before_anything_goes(
        rt, clock, on_chunk, said) -> None:
    """on_chunk was first called after the first chunk had committed (deleted): one that is
    not callable raised a bare "'str' object is not callable", and one that cannot take the
    report, its one argument, a bare TypeError ("takes 0 positional arguments but 1 was
    given"), each naming nothing, from the writer's task; an ``async def`` one made a
    coroutine nobody awaited (a RuntimeWarning), so the caller counted nothing (so did an
    object whose ``__call__`` is ``async def``: only functions were looked at). Each is
    refused naming on_chunk, nothing deleted."""
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    async with rt.open_turn(session_id) as ctx:
        assert await (await ctx.output.send_text("kept")).wait() == "delivered"
    clock[0] += 100
    with pytest.raises(ValidationError) as caught:
        await rt.prune(older_than=50, on_chunk=on_chunk)
    assert caught.value.field == "on_chunk"
    assert said in str(caught.value)
    assert len(await rt.deliveries(session_id)) == 1


def _event_stamps(db_path) -> dict[int, float]:
    conn = sqlite3.connect(db_path)
    try:
        return dict(conn.execute("SELECT event_seq, created_at FROM events"))
    finally:
        conn.close()


async def test_an_event_stamped_in_the_future_holds_no_older_event_back(
        rt, clock, db_path, autojump_clock) -> None:
    """A wall clock that ran ahead (then was set right) stamps an event far in the future.
    The prune walked the events in seq order and stopped at the first one the cutoff keeps:
    every later event, however old, was kept for as long as that stamp stayed ahead of the
    cutoff (for ever, for one in 2999). It is kept (never deleted before its own stamp is
    older than the cutoff), the horizon rises past it, and a later prune deletes it."""
    await rt.create_session()  # event 1 at 1000
    clock[0] = 32_503_680_000.0  # 2999: the clock ran ahead
    await rt.create_session()  # stamped in 2999
    clock[0] = 1_010.0  # set right
    for _ in range(3):
        await rt.create_session()
    clock[0] = 5_000.0
    await rt.create_session()  # the newest, kept
    stamps = _event_stamps(db_path)
    [future] = [seq for seq, at in stamps.items() if at > 5_000]
    old_after = [seq for seq, at in stamps.items() if seq > future and at < 2_000]
    assert len(old_after) == 3
    follower = rt.events(after_seq=max(stamps))  # at the head: a live follower

    report = await rt.prune(older_than=3_000)  # cutoff 2000

    assert report.events == 4
    left = _event_stamps(db_path)
    assert set(left) == {future, max(stamps)}  # the future one kept, by its own stamp
    horizon = max(old_after) + 1
    with pytest.raises(EventsPrunedError) as caught:
        await rt.events(after_seq=future).__anext__()
    assert caught.value.first_kept == horizon
    assert [event.seq async for event in _until_empty(rt.events(after_seq=horizon - 1))] \
        == [max(stamps)]
    # the live follower goes on by seq
    await rt.create_session()
    assert (await follower.__anext__()).seq == max(stamps) + 1
    # once its own stamp is older than the cutoff, the one kept below the horizon goes too
    clock[0] = 32_503_690_000.0
    await rt.create_session()
    assert (await rt.prune(older_than=3_000)).events == 3
    assert list(_event_stamps(db_path)) == [max(stamps) + 2]


async def test_a_pruned_delivery_leaves_its_event_stamped_in_the_future_until_it_is_old(
        rt, clock, db_path, autojump_clock) -> None:
    """Its events go with a pruned delivery, but not one stamped after the cutoff (the clock
    ran ahead as it was queued, and an earlier prune raised the horizon past it while the
    delivery was kept): an event is deleted only once its own stamp is older than the
    cutoff; a later prune does that."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.stall()
    rt.router.bind(session_id, route)
    clock[0] = 32_503_680_000.0  # 2999: the clock ran ahead
    async with rt.open_turn(session_id) as ctx:
        sent = await ctx.output.send_text("queued in 2999")
        await route.wait_attempted(1)
        clock[0] = 1_010.0  # set right
        await rt.create_session()
        clock[0] = 5_000.0
        await rt.create_session()
        future = {seq for seq, at in _event_stamps(db_path).items() if at > 5_000}
        assert future
        assert (await rt.prune(older_than=3_000)).events == 2  # the sessions' at 1000, 1010
        route.release()
        assert await sent.wait() == "delivered"
    clock[0] = 10_000.0
    await rt.create_session()

    assert (await rt.prune(older_than=3_000)).deliveries == 1

    assert set(_event_stamps(db_path)) >= future
    clock[0] = 32_503_690_000.0
    await rt.create_session()
    await rt.prune(older_than=3_000)
    assert not set(_event_stamps(db_path)) & future


async def test_the_id_of_a_message_still_held_is_kept_so_its_resend_is_a_duplicate(
        db_path, workspace, clock) -> None:
    """A retention shorter than a turn's wait (a queue behind a long turn, a stalled agent)
    pruned the client message id of a message still held: the platform's resend of it was a
    new message, and the agent answered it twice. An id a held message still has is kept;
    once released, the next prune deletes it."""
    agent = GatedAgent()
    async with tidings.open_runtime(db_path, workspace=workspace,
                                    clock=lambda: clock[0]) as rt:
        channel = RecordingChannel(rt, ChannelConfig("ops", dedupe_message_ids=True),
                                   agent=agent)
        assert await channel.say("hello", message_id="m1") == "started"
        await agent.wait_turns(1)
        assert await channel.say("/help", message_id="m2") == "command"  # held by nothing
        clock[0] += 3_600

        assert (await rt.prune(older_than=60)).client_messages == 1

        assert await channel.say("hello", message_id="m1") == "duplicate"
        assert await channel.say("/help", message_id="m2") == "command"  # its window past
        agent.release()
        await channel.wait_idle()
        clock[0] += 3_600
        assert (await rt.prune(older_than=60)).client_messages == 2
    assert [turn.text for turn in agent.turns] == ["hello"]


async def test_the_events_kept_below_the_horizon_go_a_bounded_chunk_per_commit(
        rt, clock, monkeypatch, autojump_clock) -> None:
    """Events the horizon passed but kept (stamped in the future) go, once old, with the
    others, EVENTS_PER_STEP a commit at most: no commit deletes more than that of them."""
    monkeypatch.setattr(prune_module, "EVENTS_PER_STEP", 2)
    clock[0] = 32_503_680_000.0  # 2999: the clock ran ahead
    for _ in range(3):
        await rt.create_session()
    clock[0] = 1_010.0
    for _ in range(3):
        await rt.create_session()
    clock[0] = 5_000.0
    await rt.create_session()
    chunks: list[PruneReport] = []
    assert (await rt.prune(older_than=3_000, on_chunk=chunks.append)).events == 3
    clock[0] = 32_503_690_000.0
    await rt.create_session()
    chunks.clear()
    assert (await rt.prune(older_than=3_000, on_chunk=chunks.append)).events == 4
    assert max(chunk.events for chunk in chunks) == 2


async def test_no_prune_chunk_looks_at_every_event_kept_below_the_horizon(
        rt, clock, monkeypatch) -> None:
    """Events a prune keeps below the horizon (those of deliveries still owed something: an
    ``unrouted`` row waits for its client for good) were all looked at again by every chunk
    of every prune, so a chunk's work, which holds the writer (live sends wait), grew with how
    many a database had kept. A chunk looks at EVENTS_PER_STEP of them at most, and a prune
    at each once: no chunk does more with three times as many kept."""
    monkeypatch.setattr(prune_module, "DELIVERIES_PER_STEP", 1)
    monkeypatch.setattr(prune_module, "EVENTS_PER_STEP", 50)
    work: list[int] = []
    real_call = retention_module.prune_call

    def counted(*args, **kwargs) -> Call:
        call = real_call(*args, **kwargs)

        def run(conn: sqlite3.Connection):
            ticks = [0]

            def tick() -> int:
                ticks[0] += 1
                return 0

            conn.set_progress_handler(tick, 1)  # one tick per SQLite VM instruction
            try:
                return call.fn(conn)
            finally:
                conn.set_progress_handler(None, 1)
                work.append(ticks[0])
        return Call(run)

    monkeypatch.setattr(retention_module, "prune_call", counted)
    unrouted = await rt.create_session(channel="web")  # no route: its rows are kept
    served = await rt.create_session(channel="web")
    rt.router.bind(served, MemoryRoute())

    async def most_work_of_a_chunk(kept: int) -> int:
        async with rt.open_turn(unrouted) as ctx:
            for n in range(kept):
                assert await (await ctx.output.send_text(f"{n}")).wait() == "unrouted"
        async with rt.open_turn(served) as ctx:
            for n in range(3):
                assert await (await ctx.output.send_text(f"{n}")).wait() == "delivered"
        clock[0] += 100
        work.clear()
        assert (await rt.prune(older_than=50)).deliveries == 3
        return max(work)

    await most_work_of_a_chunk(100)
    with_100 = await most_work_of_a_chunk(0)  # the 100 are below the horizon now
    await most_work_of_a_chunk(200)
    with_300 = await most_work_of_a_chunk(0)
    kept = await rt.deliveries(unrouted)
    assert len(kept) == 300
    assert with_300 < with_100 + 300, (with_100, with_300)
    # what is kept stays whole, and the rest went
    assert [event.type for event in await rt.delivery_events(kept[0].delivery_id)][-1] \
        == "delivery.unrouted"
    assert database_violations(rt.store.path) == []
    assert await rt.deliveries(served) == []
