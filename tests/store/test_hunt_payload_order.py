"""A batch the writer child cannot load (a value whose class only the host has, a frame too big
for the child's memory) commits in the host instead: it must still commit before every batch
sent after it, as the process writer promises (transactions in the order of their batches)."""

from __future__ import annotations

from typing import Any

import trio

from tidings.store import Execute, InsertRows, open_store


def _refuse_outside_the_host(value: str) -> str:
    raise RuntimeError("only the host can load this value")


class _HostOnly(str):
    """Text SQLite binds in the host, but that the writer child cannot unpickle."""

    def __reduce__(self) -> Any:
        return (_refuse_outside_the_host, (str(self),))


async def _round(store, key: str) -> tuple[dict[str, object], object]:
    heard: dict[str, object] = {}
    both = trio.Event()

    def callbacks(name: str) -> dict[str, Any]:
        def tell(what: object) -> None:
            heard[name] = what
            if len(heard) == 2:
                both.set()

        return {"on_commit": lambda results: tell(("committed", results)),
                "on_error": lambda error: tell(("failed", error))}

    # max_batch=1: two batches, two frames. The first cannot be loaded by the child; the
    # second updates the row the first inserts, so it must see it.
    store.commit_nowait([InsertRows("kv", ("k", "v"), ((key, _HostOnly("first")),))],
                        **callbacks("insert"))
    store.commit_nowait([Execute("UPDATE kv SET v = 'second' WHERE k = ? RETURNING k", (key,))],
                        **callbacks("update"))
    await both.wait()
    [[(value,)]] = await store.commit([Execute("SELECT v FROM kv WHERE k = ?", (key,))])
    return heard, value


async def test_a_batch_the_child_cannot_load_still_commits_before_later_batches(
        tmp_path) -> None:
    with trio.fail_after(60):  # hang guard (real time: the child does real work)
        async with open_store(tmp_path / "a.db", writer="process", max_batch=1) as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            for i in range(6):  # the race went the wrong way about 4 times in 5
                heard, value = await _round(store, f"k{i}")
                assert heard == {"insert": ("committed", [None]),
                                 "update": ("committed", [[(f"k{i}",)]])}, (i, heard)
                assert value == "second", f"round {i}: the later batch committed first"
            # The child takes frames again afterwards, in order.
            await store.commit([InsertRows("kv", ("k", "v"), (("after", "v"),))])
            assert store.statistics().requests >= 14
