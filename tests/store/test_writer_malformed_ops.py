"""A write whose ops are no sequence of ops (one op not in a list, a generator, ``None``, a
list holding a tuple) is refused by name, alone: its neighbours in the batch commit and hear so,
and the writer goes on.

One op passed bare (``store.commit(Execute(...))``, an easy slip) crashed the writer with
"TypeError: 'Execute' object is not iterable": ``open_store`` failed, and its batch mates
heard "the writer stopped before this write committed". A generator batched with others was
worse: the isolated path committed the batch, then failed counting its statements, so the
neighbours that had committed were told they had not.
"""

from __future__ import annotations

from typing import Any

import pytest
import trio

from tidings.errors import ValidationError
from tidings.store import Execute, InsertRows, UpdateRows, open_store


def _row(key: str) -> InsertRows:
    return InsertRows("kv", ("k", "v"), ((key, "v"),))


class _Unprintable:
    """Not an op, and its repr raises: the refusal must not print it."""

    def __repr__(self) -> str:
        raise RuntimeError("no repr")


MALFORMED = {
    "one op not in a list": lambda: _row("bad"),
    "a generator of ops": lambda: (op for op in [_row("bad")]),
    "None": lambda: None,
    "a list holding a tuple": lambda: [("INSERT INTO kv VALUES (?, ?)", ("bad", "v"))],
    "a list holding what cannot be printed": lambda: [_Unprintable()],
}


@pytest.mark.parametrize("writer", ["thread", "process"])
@pytest.mark.parametrize("malformed", MALFORMED.values(), ids=MALFORMED.keys())
async def test_malformed_ops_are_refused_by_name_and_alone(tmp_path, writer, malformed) -> None:
    heard: dict[str, list[tuple[str, Any]]] = {}
    all_heard = trio.Event()

    def callbacks(name: str) -> dict[str, Any]:
        def tell(kind: str, what: object) -> None:
            heard.setdefault(name, []).append((kind, what))
            if sum(map(len, heard.values())) == 3:
                all_heard.set()

        return {"on_commit": lambda results: tell("committed", results),
                "on_error": lambda error: tell("failed", error)}

    with trio.fail_after(30):  # hang guard (real time: the process writer's child)
        async with open_store(tmp_path / "a.db", writer=writer) as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            # No checkpoint between them: the writer takes all three as one batch.
            store.commit_nowait([_row("good1")], **callbacks("good1"))
            store.commit_nowait(malformed(), **callbacks("bad"))
            store.commit_nowait([_row("good2")], **callbacks("good2"))
            await all_heard.wait()
            assert heard["good1"] == [("committed", [None])]
            assert heard["good2"] == [("committed", [None])]
            [(kind, error)] = heard["bad"]
            assert kind == "failed"
            assert isinstance(error, ValidationError)
            assert error.field == "ops"
            # Alone in its batch, and awaited: refused the same way, the writer still runs.
            with pytest.raises(ValidationError, match=r"^ops: "):
                await store.commit(malformed())
            assert await store.commit([Execute("SELECT k FROM kv ORDER BY k")]) \
                == [[("good1",), ("good2",)]]


@pytest.mark.parametrize("writer", ["thread", "process"])
@pytest.mark.parametrize("op", [
    InsertRows("kv", ["k", "v"], (("bad", "v"),)),  # type: ignore[arg-type]
    UpdateRows("kv", "k", ["v"], (("good1", "w"),)),  # type: ignore[arg-type]
    UpdateRows("kv", "k", ("v",), (("good1", "w"),), guard="v = ?",
               guard_params=["v"]),  # type: ignore[arg-type]
], ids=["InsertRows columns", "UpdateRows columns", "UpdateRows guard_params"])
async def test_an_op_given_a_list_for_a_tuple_is_refused_saying_so(tmp_path, writer, op) -> None:
    # Such an op cannot be grouped (its group key cannot be hashed): it failed with "StoreError:
    # TypeError: unhashable type: 'list'", naming nothing.
    with trio.fail_after(30):  # hang guard (real time: the process writer's child)
        async with open_store(tmp_path / "a.db", writer=writer) as store:
            await store.commit([Execute("CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT)")])
            await store.commit([_row("good1")])
            with pytest.raises(ValidationError, match=r"^ops: .*a tuple") as caught:
                await store.commit([op])
            assert caught.value.field == "ops"
            assert type(op).__name__ in str(caught.value)
            assert await store.commit([Execute("SELECT k, v FROM kv")]) == [[("good1", "v")]]
