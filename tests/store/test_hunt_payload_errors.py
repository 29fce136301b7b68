"""A value SQLite cannot bind fails its own request with the error :meth:`Store.commit`
documents (``StoreError``, the driver's error as its cause), whichever writer commits it, and its
batch mates still commit."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tidings.errors import StoreError
from tidings.store import Call, Execute, InsertRows, open_store


def _row(key: str, value: object = "v") -> InsertRows:
    return InsertRows("kv", ("k", "v"), ((key, value),))


class _Deliberate(OverflowError):
    """What a Call op raises on purpose: it reaches its caller as it is."""


def _raise_deliberately(conn: object) -> None:
    raise _Deliberate("mine")


@pytest.mark.parametrize("writer", ["thread", "process"])
@pytest.mark.parametrize(("bad", "driver_error"), [
    (2 ** 64, "OverflowError"), ("lone \ud800 surrogate", "UnicodeEncodeError")],
    ids=["int", "surrogate"])
async def test_a_value_sqlite_cannot_bind_fails_alone_with_a_store_error(
        tmp_path, writer, bad, driver_error) -> None:
    heard: dict[str, Any] = {}
    all_heard = trio.Event()

    def callbacks(name: str) -> dict[str, Any]:
        def tell(what: object) -> None:
            heard[name] = what
            if len(heard) == 3:
                all_heard.set()

        return {"on_commit": lambda results: tell(results), "on_error": tell}

    with trio.fail_after(30):  # hang guard
        async with open_store(tmp_path / "a.db", writer=writer) as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v)")])
            with pytest.raises(StoreError) as alone:  # a batch of one: the merged path
                await store.commit([_row("alone", bad)])
            assert str(alone.value).startswith(f"{driver_error}: ")
            store.commit_nowait([_row("good1")], **callbacks("good1"))  # one batch of three
            store.commit_nowait([_row("bad", bad)], **callbacks("bad"))
            store.commit_nowait([_row("good2")], **callbacks("good2"))
            await all_heard.wait()
            with pytest.raises(_Deliberate):  # a Call's own exception is not rewrapped
                await store.commit([Call(_raise_deliberately)])
            rows = await store.commit([Execute("SELECT k FROM kv ORDER BY k")])
    assert heard["good1"] == heard["good2"] == [None]
    assert isinstance(heard["bad"], StoreError)
    assert rows == [[("good1",), ("good2",)]]
