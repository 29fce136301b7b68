"""Group commit: behaviour a mutation audit of ``store/_batch.py`` found no test pinning.
Each test names the mutant it kills (a change no other test noticed); it passes on the real
code and failed with that change applied."""

from __future__ import annotations

from typing import Any

import trio

from tidings.errors import ConflictError, StoreError
from tidings.store import Execute, InsertRows, open_store


async def test_the_write_that_ended_the_isolated_run_is_told_it_may_have_committed(
        tmp_path) -> None:
    """A batch whose merged run failed (a conflict) is run again one request at a time; a
    request there that ends the transaction itself (``COMMIT``) ran, and what ran before it
    may have committed: it is told "may or may not have committed", and only the requests
    after it that they were not run. Mutant: the ending request told it was not run (it
    ran: its COMMIT committed)."""
    heard: dict[str, Any] = {}
    all_heard = trio.Event()
    requests = {
        "conflict": [InsertRows("kv", ("k", "v"), (("taken", "v"),))],
        "ends": [Execute("COMMIT")],
        "after": [InsertRows("kv", ("k", "v"), (("after", "v"),))],
    }

    def callbacks(name: str) -> dict[str, Any]:
        def tell(what: object) -> None:
            heard[name] = what
            if len(heard) == len(requests):
                all_heard.set()

        return {"on_commit": lambda results: tell("committed"), "on_error": tell}

    with trio.fail_after(30):  # hang guard (real time: the writer's thread)
        async with open_store(tmp_path / "a.db", writer="thread") as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            await store.commit([InsertRows("kv", ("k", "v"), (("taken", "v"),))])
            for name, ops in requests.items():  # no checkpoint between: one batch
                store.commit_nowait(ops, **callbacks(name))
            await all_heard.wait()
    assert isinstance(heard["conflict"], ConflictError)
    assert isinstance(heard["ends"], StoreError)
    assert "may or may not have committed" in str(heard["ends"])
    assert isinstance(heard["after"], StoreError)
    assert "was not run" in str(heard["after"])
