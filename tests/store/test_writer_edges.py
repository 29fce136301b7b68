"""Edges of the process writer: one request's bad value must not fail its batch mates, and the
writer's cleanup must answer every request and stop its child whatever went wrong."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tidings.store import Call, Execute, InsertRows, open_store

from .conftest import alive


def _row(key: str, value: object = "v") -> InsertRows:
    return InsertRows("kv", ("k", "v"), ((key, value),))


class _RefusesPickle:
    """A value SQLite cannot bind, and pickle cannot dump (with a ValueError)."""

    def __reduce__(self) -> Any:
        raise ValueError("this value does not pickle")


class _ChildCannotLoad:
    """A value that pickles, but whose unpickling raises in the writer child."""

    def __reduce__(self) -> Any:
        return (int, ("not a number",))


class _Outcomes:
    """Callbacks for commit_nowait: what each request heard, and how many callbacks ran."""

    def __init__(self, expected: int) -> None:
        self.heard: dict[str, list[object]] = {}
        self._expected = expected
        self.all_heard = trio.Event()

    def _tell(self, name: str, what: object) -> None:
        self.heard.setdefault(name, []).append(what)
        if sum(map(len, self.heard.values())) >= self._expected:
            self.all_heard.set()

    def callbacks(self, name: str) -> dict[str, Any]:
        return {"on_commit": lambda results: self._tell(name, ("committed", results)),
                "on_error": lambda error: self._tell(name, ("failed", error))}


async def _neighbours_of(bad_value: object, tmp_path, writer: str) -> dict[str, list[object]]:
    outcomes = _Outcomes(3)
    async with open_store(tmp_path / "a.db", writer=writer) as store:
        await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v)")])
        # No checkpoint between them: the writer takes all three as one batch (one frame).
        store.commit_nowait([_row("good1")], **outcomes.callbacks("good1"))
        store.commit_nowait([_row("bad", bad_value)], **outcomes.callbacks("bad"))
        store.commit_nowait([_row("good2")], **outcomes.callbacks("good2"))
        await outcomes.all_heard.wait()
    return outcomes.heard


async def test_a_value_that_fails_to_pickle_fails_alone_in_the_writer_process(tmp_path) -> None:
    with trio.fail_after(30):  # hang guard
        heard = await _neighbours_of(_RefusesPickle(), tmp_path, "process")
    assert heard["good1"] == [("committed", [None])]
    assert heard["good2"] == [("committed", [None])]
    assert [kind for kind, _ in heard["bad"]] == ["failed"]


async def test_a_value_the_child_cannot_load_fails_alone_in_the_writer_process(
        tmp_path) -> None:
    with trio.fail_after(30):  # hang guard
        heard = await _neighbours_of(_ChildCannotLoad(), tmp_path, "process")
    assert heard["good1"] == [("committed", [None])]
    assert heard["good2"] == [("committed", [None])]
    assert [kind for kind, _ in heard["bad"]] == ["failed"]


async def _burst_under_a_failing_listener(tmp_path, outcomes: _Outcomes,
                                         pids: list[int]) -> None:
    async with open_store(tmp_path / "a.db", writer="process") as store:
        await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v)")])
        pid = store.writer.process_id
        assert pid is not None
        pids.append(pid)

        def listener() -> None:
            raise RuntimeError("listener")

        store.writer.add_listener(listener)
        # An idle child and a burst of ten: two frames (halves) are in flight when the first
        # answer's listener fails; the writer logs it and goes on.
        for i in range(10):
            store.commit_nowait([_row(f"k{i}")], **outcomes.callbacks(f"k{i}"))
        await outcomes.all_heard.wait()


async def test_a_failing_listener_neither_stops_the_writer_nor_loses_a_write(
        tmp_path, caplog) -> None:
    outcomes = _Outcomes(10)
    pids: list[int] = []
    with trio.fail_after(30):  # hang guard
        await _burst_under_a_failing_listener(tmp_path, outcomes, pids)
    assert sorted(outcomes.heard) == [f"k{i}" for i in range(10)]
    assert all(heard[0][0] == "committed" for heard in outcomes.heard.values())
    assert "event=writer_listener_failed" in caplog.text
    assert not alive(pids[0]), "the writer child still runs after its store closed"


class _Crash(BaseException):
    """Raised by a Call op: not an Exception, so it takes the writer down with it."""


async def _crash_with_requests_buffered(tmp_path, writer: str, outcomes: _Outcomes) -> None:
    async with open_store(tmp_path / "a.db", writer=writer, max_batch=1) as store:
        await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v)")])
        # max_batch=1: the writer takes the crashing request alone; the others stay buffered in
        # its mailbox when it dies.
        store.commit_nowait([Call(_raise_crash)], **outcomes.callbacks("crash"))
        for name in ("after1", "after2"):
            store.commit_nowait([_row(name)], **outcomes.callbacks(name))
        await outcomes.all_heard.wait()


def _raise_crash(conn: object) -> None:
    raise _Crash


@pytest.mark.parametrize("writer", ["thread", "process"])
async def test_requests_buffered_when_the_writer_dies_hear_of_it(tmp_path, writer) -> None:
    outcomes = _Outcomes(3)
    with trio.fail_after(30):  # hang guard
        with pytest.raises(_Crash):
            await _crash_with_requests_buffered(tmp_path, writer, outcomes)
    assert sorted(outcomes.heard) == ["after1", "after2", "crash"]
    assert all(len(heard) == 1 for heard in outcomes.heard.values())
