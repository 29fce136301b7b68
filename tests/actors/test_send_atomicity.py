"""A send is one transaction: if its commit fails, nothing of it is written, and the next send
of the session goes through as if the failed one had never been asked for."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import pytest
import trio

from tidings.errors import DeliveryNotFoundError, StoreError
from tidings.store import Call, Op, OutboxInsert
from tidings.testing import MemoryRoute

from .conftest import rows

_WRITTEN_BY_A_SEND = {"outbox": "delivery_id", "work_items": "subject_id",
                      "messages": "delivery_id", "artifacts": "delivery_id",
                      "events": "delivery_id"}
"""The tables a send writes, with the column that names its delivery."""


class FailNextSend:
    """Wraps ``store.commit``: the next commit that inserts an outbox row gets one more op,
    run after the send's own inserts, that fails in the writer; the transaction rolls back."""

    def __init__(self, store) -> None:
        self._real = store.commit
        self.armed = True
        self.failed: list[str] = []  # delivery ids of the sends whose commit failed

    async def __call__(self, ops: Sequence[Op], **kwargs: Any) -> list[Any]:
        inserts = [op for op in ops if isinstance(op, OutboxInsert)]
        if self.armed and inserts:
            self.armed = False
            self.failed.extend(op.values["delivery_id"] for op in inserts)
            ops = [*ops, Call(_boom)]
        return await self._real(ops, **kwargs)


def _boom(conn: sqlite3.Connection) -> None:
    raise sqlite3.OperationalError("injected: disk I/O error")


async def _send(ctx, kind: str):
    if kind == "text":
        return await ctx.output.send_text("hello", history_policy="persist",
                                          idempotency_key="k")
    return await ctx.output.send_image("chart.png", history_text="Sent a chart.",
                                       artifact_metadata={"w": 10}, idempotency_key="k")


@pytest.mark.parametrize("kind", ["text", "image"])
async def test_a_send_whose_commit_fails_writes_nothing_and_the_next_one_works(
        rt, workspace, db_path, kind) -> None:
    (workspace / "chart.png").write_bytes(b"\x89PNG")
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(capabilities={"text", "image"})
    rt.router.bind(session_id, route)
    fault = FailNextSend(rt.store)
    rt.store.commit = fault
    with trio.fail_after(30):  # hang guard: a leaked lane reservation would stall the next send
        async with rt.open_turn(session_id) as ctx:
            with pytest.raises(StoreError, match="injected: disk I/O error"):
                await _send(ctx, kind)
            [failed] = fault.failed
            for table, column in _WRITTEN_BY_A_SEND.items():
                assert rows(db_path, f"SELECT count(*) FROM {table} "
                                     f"WHERE {column} = ?", failed) == [(0,)], table
            for table in ("outbox", "work_items", "messages", "artifacts"):
                assert rows(db_path, f"SELECT count(*) FROM {table}") == [(0,)], table
            assert rows(db_path, "SELECT last_seq FROM sessions WHERE session_id = ?",
                        session_id) == [(0,)]
            with pytest.raises(DeliveryNotFoundError):
                await rt.delivery_status(failed)
            assert await rt.deliveries(session_id=session_id) == []
            assert await rt.history(session_id) == []
            # The idle session's lane was reserved for the send (written already claimed); a
            # failed write must give it back, or the session never gets an idle lane again.
            # Nothing ran in it: it is forgotten, not kept (a lane per failed send would leak).
            assert rt.dispatcher.lane(session_id) is None
            assert rt.dispatcher.statistics().lanes == 0
            # The same key again: the failed send did not use it up.
            handle = await _send(ctx, kind)
        assert await handle.wait() == "delivered"
    assert handle.delivery_id != failed
    assert handle.seq == 1
    assert [o.delivery_id for o in route.attempted] == [handle.delivery_id]
    [delivery] = await rt.deliveries(session_id=session_id)
    assert (delivery.delivery_id, delivery.status, delivery.attempts) == (
        handle.delivery_id, "sent", 1)
    [message] = await rt.history(session_id)
    assert message.delivery_id == handle.delivery_id
    expected_artifacts = [(handle.delivery_id,)] if kind == "image" else []
    assert rows(db_path, "SELECT delivery_id FROM artifacts") == expected_artifacts
    assert rows(db_path, "SELECT subject_id FROM work_items") == [(handle.delivery_id,)]
