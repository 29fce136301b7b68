"""The runtime's helpers for acking channels: confirm through a seq, replay reads, requeue,
and durable client message ids."""

from __future__ import annotations

import pytest

import tidings
from tidings.errors import SessionNotFoundError, ValidationError
from tidings.testing import MemoryRoute


async def _sent(rt, session_id: str, texts: list[str]):
    async with rt.open_turn(session_id) as ctx:
        return [await ctx.output.send_text(text) for text in texts]


async def _statuses(rt, handles) -> list[str]:
    return [(await rt.delivery_status(h.delivery_id)).outbox_status for h in handles]


async def test_confirm_through_settles_sending_and_unknown_rows_up_to_the_seq(rt) -> None:
    session_id = await rt.create_session(channel="gateway")
    route = MemoryRoute(ack_window=8)
    rt.router.bind(session_id, route)
    handles = await _sent(rt, session_id, ["a", "b", "c", "d"])
    await route.wait_delivered(4)
    assert [h.seq for h in handles] == [1, 2, 3, 4]
    await rt.abandon_unacked(session_id)  # the connection dropped: all four unknown
    assert await rt.confirm_through(session_id, 2) == [h.delivery_id for h in handles[:2]]
    assert await _statuses(rt, handles) == ["sent", "sent", "unknown", "unknown"]
    assert await rt.confirm_through(session_id, 2) == []  # idempotent
    with pytest.raises(ValidationError, match="seq"):
        await rt.confirm_through(session_id, -1)


@pytest.mark.parametrize("seq", [-1, 2 ** 63])
async def test_a_seq_the_store_cannot_hold_is_a_validation_error(rt, seq: int) -> None:
    session_id = await rt.create_session(channel="gateway")
    with pytest.raises(ValidationError) as confirm:
        await rt.confirm_through(session_id, seq)
    with pytest.raises(ValidationError) as read:
        await rt.stored_deliveries(session_id, after_seq=seq)
    assert (confirm.value.field, read.value.field) == ("seq", "after_seq")


async def test_stored_deliveries_reads_rows_after_a_seq_by_kind_and_status(rt) -> None:
    session_id = await rt.create_session(channel="gateway")
    async with rt.open_turn(session_id) as ctx:
        await ctx.output.send_text("one")
        await ctx.output.progress("working")
        await ctx.output.notice("heads up")
    rows = await rt.stored_deliveries(session_id, after_seq=0)
    assert [(r.outbound.seq, r.outbound.kind, r.outbound.text) for r in rows] == [
        (1, "message", "one"), (2, "progress", "working"), (3, "notice", "heads up")]
    later = await rt.stored_deliveries(session_id, after_seq=1, kinds=("message", "notice"))
    assert [r.outbound.text for r in later] == ["heads up"]
    assert await rt.last_seq(session_id) == 3
    with pytest.raises(SessionNotFoundError):
        await rt.last_seq("session_nope")


async def test_requeue_hands_unrouted_rows_back_to_the_lane_in_order(rt) -> None:
    session_id = await rt.create_session(channel="gateway")
    handles = await _sent(rt, session_id, ["x", "y"])
    assert [await h.wait() for h in handles] == ["unrouted", "unrouted"]
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    ids = [h.delivery_id for h in handles]
    assert await rt.requeue(session_id, ids) == ids
    await route.wait_delivered(2)
    assert [o.text for o in route.delivered] == ["x", "y"]
    assert await rt.requeue(session_id, ids) == []  # sent now: nothing moves


async def test_client_message_ids_are_remembered_across_restarts(db_path, workspace) -> None:
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert await rt.client_message_outcome("gateway", "gateway:conv:a", "m1") is None
        assert await rt.remember_client_message("gateway", "gateway:conv:a", "m1",
                                                session_id=None, outcome="started")
        assert not await rt.remember_client_message("gateway", "gateway:conv:a", "m1",
                                                    session_id=None, outcome="queued")
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert await rt.client_message_outcome("gateway", "gateway:conv:a", "m1") == "started"
        assert await rt.client_message_outcome("gateway", "gateway:conv:b", "m1") is None
