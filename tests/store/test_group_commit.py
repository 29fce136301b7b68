"""The writer commits all that waits in one transaction; failures stay with their request."""

from __future__ import annotations

import sqlite3
import threading

import pytest
import trio
import trio.testing

from tidings.errors import ConflictError, InjectedFault, StoreError
from tidings.store import Call, InsertRows, UpdateRows, WriteRequest, open_store, prepare_store


def _row(key: str, value: str = "v") -> InsertRows:
    return InsertRows("kv", ("k", "v"), ((key, value),))


async def _make_table(store) -> None:
    await store.commit([Call(lambda c: c.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)"))])


async def _keys(store) -> list[str]:
    return await store.read(lambda c: [k for (k,) in c.execute("SELECT k FROM kv ORDER BY k")])


async def test_concurrent_callers_share_transactions(tmp_path) -> None:
    async with open_store(tmp_path / "a.db") as store:
        await _make_table(store)
        before = store.statistics()
        async with trio.open_nursery() as nursery:
            for i in range(200):
                nursery.start_soon(store.commit, [_row(f"k{i:03}")])
        after = store.statistics()
        assert after.requests - before.requests == 200
        assert after.batches - before.batches < 200
        assert after.largest_batch > 1
        assert len(await _keys(store)) == 200


async def _run_one_batch(tmp_path, requests: list[WriteRequest]) -> None:
    """Queue *requests* before the writer starts, so they land in one batch."""
    store = await prepare_store(tmp_path / "a.db")
    send, receive = trio.open_memory_channel[WriteRequest](len(requests) + 1)
    setup = WriteRequest([Call(lambda c: c.execute(
        "CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)"))])
    send.send_nowait(setup)
    for request in requests:
        send.send_nowait(request)
    send.close()
    await store.writer.serve(receive)
    store.close()
    assert store.statistics().batches == 1


async def test_a_failing_request_does_not_lose_its_batch_mates(tmp_path) -> None:
    good_1 = WriteRequest([_row("a")])
    # Its first op would succeed; the second conflicts with good_1: nothing of it may stay.
    bad = WriteRequest([_row("b"), _row("a", "clash")])
    good_2 = WriteRequest([_row("c")])
    await _run_one_batch(tmp_path, [good_1, bad, good_2])
    assert (await good_1.wait()) == [None]
    assert (await good_2.wait()) == [None]
    with pytest.raises(ConflictError, match="UNIQUE"):
        await bad.wait()
    async with open_store(tmp_path / "a.db") as store:
        assert await _keys(store) == ["a", "c"]
        [[value]] = (await store.read(lambda c: c.execute("SELECT v FROM kv WHERE k='a'")
                                      .fetchall()))
        assert value == "v"


async def test_an_exception_inside_a_call_op_fails_only_that_request(tmp_path) -> None:
    def boom(conn):
        conn.execute("INSERT INTO kv VALUES ('x', 'x')")
        raise KeyError("boom")

    ok = WriteRequest([_row("a")])
    bad = WriteRequest([Call(boom)])
    await _run_one_batch(tmp_path, [ok, bad])
    assert (await ok.wait()) == [None]
    with pytest.raises(KeyError):
        await bad.wait()
    async with open_store(tmp_path / "a.db") as store:
        assert await _keys(store) == ["a"]


async def test_guarded_updates_report_which_rows_changed(tmp_path) -> None:
    async with open_store(tmp_path / "a.db") as store:
        await _make_table(store)
        await store.commit([_row("a", "queued"), _row("b", "sent")])
        claim = UpdateRows("kv", "k", ("v",), (("a", "sending"), ("b", "sending")),
                           guard="v = ?", guard_params=("queued",))
        [changed] = await store.commit([claim])
        assert changed == {"a"}


async def test_a_write_whose_caller_is_cancelled_still_commits_and_runs_on_commit(
        tmp_path) -> None:
    seen: list[list[object]] = []
    release = threading.Event()
    cancelled: list[bool] = []

    def slow_insert(conn) -> None:
        release.wait()
        conn.execute("INSERT INTO kv VALUES ('a', 'v')")

    async def caller(task_status=trio.TASK_STATUS_IGNORED) -> None:
        with trio.CancelScope() as scope:
            task_status.started(scope)
            await store.commit([Call(slow_insert)], on_commit=seen.append)
        cancelled.append(scope.cancelled_caught)

    async with open_store(tmp_path / "a.db") as store:
        await _make_table(store)
        async with trio.open_nursery() as nursery:
            scope = await nursery.start(caller)
            await trio.testing.wait_all_tasks_blocked()
            scope.cancel()
        release.set()
        await store.commit([])  # the writer answers in order: the slow batch is done
        assert cancelled == [True]
        assert seen == [[None]]
        assert await _keys(store) == ["a"]


class _FaultyReceiver:
    """A mailbox whose ``receive_nowait`` raises once, after handing out *fail_after* items."""

    def __init__(self, receive: trio.MemoryReceiveChannel[WriteRequest], fail_after: int) -> None:
        self.inner = receive
        self.fail_after = fail_after
        self.taken = 0

    async def receive(self) -> WriteRequest:
        self.taken += 1
        return await self.inner.receive()

    def receive_nowait(self) -> WriteRequest:
        if self.taken == self.fail_after:
            self.taken += 1
            raise InjectedFault(seam="receive", child="writer")
        self.taken += 1
        return self.inner.receive_nowait()


async def test_requests_taken_by_a_crashing_writer_fail_and_the_rest_survive(tmp_path) -> None:
    store = await prepare_store(tmp_path / "a.db")
    with sqlite3.connect(store.path) as conn:
        conn.execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")
    send, receive = trio.open_memory_channel[WriteRequest](10)
    taken = [WriteRequest([_row(k)]) for k in "ab"]
    waiting = [WriteRequest([_row(k)]) for k in "cd"]
    for request in [*taken, *waiting]:
        send.send_nowait(request)
    with pytest.raises(InjectedFault):
        await store.writer.serve(_FaultyReceiver(receive, fail_after=2))
    for request in taken:  # taken by the crashed incarnation: answered, never retried
        with pytest.raises(StoreError, match="stopped before this write committed"):
            await request.wait()
    send.close()
    await store.writer.serve(receive)  # the next incarnation gets what was still buffered
    for request in waiting:
        assert (await request.wait()) == [None]
    async with open_store(tmp_path / "a.db") as reopened:
        assert await _keys(reopened) == ["c", "d"]
    store.close()


async def test_commit_nowait_reports_through_exactly_one_callback(tmp_path) -> None:
    async with open_store(tmp_path / "a.db") as store:
        await _make_table(store)
        outcomes: list[tuple[str, object]] = []
        done = trio.Event()

        def record(kind: str):
            def callback(value: object) -> None:
                outcomes.append((kind, value))
                if len(outcomes) == 2:
                    done.set()
            return callback

        store.commit_nowait([_row("a")], on_commit=record("committed"),
                            on_error=record("failed"))
        store.commit_nowait([_row("a", "clash")], on_commit=record("committed"),
                            on_error=record("failed"))
        assert outcomes == []  # nothing runs before the writer has committed
        await done.wait()
        assert outcomes[0] == ("committed", [None])
        assert outcomes[1][0] == "failed"
        assert isinstance(outcomes[1][1], ConflictError)
        assert await _keys(store) == ["a"]
        assert await store.read(lambda c: c.execute("SELECT v FROM kv").fetchone()[0]) == "v"
