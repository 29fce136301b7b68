"""The process writer: batches commit in a child process with the same results as in a thread."""

from __future__ import annotations

import os
import pickle
import signal
import sqlite3

import pytest
import trio

import tidings
from tidings.errors import ConflictError, StoreError, ValidationError
from tidings.store import (
    AppliedTransition,
    Call,
    EnqueuedDelivery,
    Execute,
    InsertRows,
    OutboxInsert,
    WriteRequest,
    open_store,
    prepare_store,
    transition,
)
from tidings.testing import MemoryRoute

from .conftest import alive


def _row(key: str, value: str = "v") -> InsertRows:
    return InsertRows("kv", ("k", "v"), ((key, value),))


def _create_table(path) -> None:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")
    conn.close()


async def test_the_writer_process_commits_and_answers_like_the_thread_writer(tmp_path) -> None:
    async with open_store(tmp_path / "a.db", writer="process") as store:
        pid = store.writer.process_id
        assert isinstance(pid, int)
        assert pid != os.getpid()
        assert alive(pid)
        await store.commit([Call(lambda c: c.execute(
            "CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)"))])  # a function: runs here
        async with trio.open_nursery() as nursery:
            for i in range(50):
                nursery.start_soon(store.commit, [_row(f"k{i:02}")])
        rows = await store.commit([Execute("SELECT count(*) FROM kv")])
        assert rows == [[(50,)]]
        # A function after process batches sees what they wrote (transactions stay in order).
        count = await store.commit([Call(lambda c: c.execute(
            "SELECT count(*) FROM kv").fetchone()[0])])
        assert count == [50]
        assert store.statistics().requests >= 53
    assert store.writer.process_id is None
    assert not alive(pid)


async def test_a_failing_request_fails_alone_in_the_writer_process(tmp_path) -> None:
    db = tmp_path / "a.db"
    store = await prepare_store(db, writer="process")
    _create_table(db)
    good = [WriteRequest([_row(f"g{i}")]) for i in range(10)]
    bad = WriteRequest([_row("b"), _row("g3", "clash")])
    send, receive = trio.open_memory_channel[WriteRequest](len(good) + 1)
    for request in [*good[:5], bad, *good[5:]]:
        send.send_nowait(request)
    send.close()
    await store.writer.serve(receive)
    store.close()
    assert all(request.result == [None] for request in good)
    assert isinstance(bad.error, ConflictError)  # the class survives the pipe
    conn = sqlite3.connect(db)
    keys = sorted(k for (k,) in conn.execute("SELECT k FROM kv"))
    conn.close()
    assert keys == sorted(f"g{i}" for i in range(10))  # nothing of the bad request stayed


async def test_an_idle_writer_process_splits_a_burst_so_commits_overlap(tmp_path) -> None:
    db = tmp_path / "a.db"
    store = await prepare_store(db, writer="process")
    _create_table(db)
    requests = [WriteRequest([_row(f"k{i:02}")]) for i in range(20)]
    send, receive = trio.open_memory_channel[WriteRequest](len(requests))
    for request in requests:
        send.send_nowait(request)
    send.close()
    await store.writer.serve(receive)
    store.close()
    stats = store.statistics()
    assert (stats.batches, stats.requests, stats.largest_batch) == (2, 20, 10)
    assert all(request.result == [None] for request in requests)


async def test_the_writer_process_dies_with_an_error_that_says_so(tmp_path) -> None:
    async def kill_the_writer_process() -> None:
        async with open_store(tmp_path / "a.db", writer="process") as store:
            os.kill(store.writer.process_id, signal.SIGKILL)
            await trio.sleep_forever()  # the writer's failure ends the store

    with pytest.raises(StoreError, match="writer process exited"):
        await kill_the_writer_process()


async def test_a_runtime_restarts_a_writer_process_that_died(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace, writer="process") as rt:
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        first = rt.store.writer.process_id
        assert first is not None
        os.kill(first, signal.SIGKILL)
        with trio.fail_after(20):
            while True:  # a send in flight at the death fails; the restarted writer takes more
                try:
                    async with rt.open_turn(session_id) as ctx:
                        handle = await ctx.output.send_text("after the restart")
                    break
                except StoreError:
                    await trio.lowlevel.checkpoint()
            assert await handle.wait() == "delivered"
        assert rt.store.writer.process_id not in (None, first)
        assert not alive(first)
        assert [o.text for o in route.delivered] == ["after the restart"]
        status = await rt.delivery_status(handle.delivery_id)
        assert status.outbox_status == "sent"


async def test_the_delivery_lifecycle_through_the_writer_process(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace, writer="process") as rt:
        session_id = await rt.create_session(channel="web")
        route = MemoryRoute()
        rt.router.bind(session_id, route)
        async with rt.open_turn(session_id) as ctx:
            sent = await ctx.output.send_text("hello", idempotency_key="k1")
            again = await ctx.output.send_text("hello", idempotency_key="k1")
            assert await sent.wait() == "delivered"
        assert again.delivery_id == sent.delivery_id  # the conflict crossed the pipe intact
        route.fail = RuntimeError("platform down")
        async with rt.open_turn(session_id) as ctx:
            failed = await ctx.output.send_text("lost", failure_history_text="(not delivered)")
            assert await failed.wait() == "failed"
        status = await rt.delivery_status(failed.delivery_id)
        assert (status.outbox_status, status.attempts) == ("failed", 1)
        assert "platform down" in status.last_error
        history = [m.text for m in await rt.history(session_id)]
        assert history == ["hello", "(not delivered)"]
        events = [e.type async for e in _events(rt)]
        assert events.count("delivery.sent") == 1
        assert events.count("delivery.failed") == 1


async def _events(rt):
    async for event in rt.events(after_seq=0):
        yield event
        if event.type == "delivery.failed":
            return


async def test_a_moved_on_row_is_reported_through_the_pipe(tmp_path) -> None:
    async with open_store(tmp_path / "a.db", writer="process") as store:
        results = await store.commit([transition("dlv_missing", "sent", now=1.0)])
        assert results[0].applied is False


async def test_the_writer_must_be_thread_or_process(tmp_path, db_path, workspace) -> None:
    with pytest.raises(ValidationError, match="writer"):
        async with tidings.open_runtime(db_path, workspace=workspace, writer="fork"):
            pass
    with pytest.raises(ValueError, match="writer"):
        await prepare_store(tmp_path / "a.db", writer="fork")


@pytest.mark.parametrize("value", [
    InsertRows("kv", ("k", "v"), (("a", "b"), ("c", None)), "OR IGNORE", None),
    OutboxInsert({"delivery_id": "d", "status": "queued"}, (("delivery.degraded", "{}"),)),
    transition("d", "sending", now=1.5, claimant="epoch:1", lease_expires_at=2.5, error="e",
               extra_events=[("delivery.degraded", {"missing": ["image"]})],
               only_from=["queued"]),
    AppliedTransition(True, 3),
    EnqueuedDelivery(7),
])
def test_what_crosses_the_pipe_comes_back_equal(value) -> None:
    assert pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) == value
