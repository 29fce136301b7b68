"""Delivery through the public API: claim, sent, failed, unrouted, and what is durable when."""

from __future__ import annotations

import contextlib
import threading

import pytest
import trio
import trio.testing

from tidings.errors import DeliveryNotFoundError, RouteMismatchError, ValidationError
from tidings.store import Call
from tidings.testing import MemoryRoute, writer_gate

from .conftest import rows


async def _session_with_route(rt, **route_options):
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(**route_options)
    rt.router.bind(session_id, route)
    return session_id, route


async def test_a_send_is_claimed_and_marked_sent_once(rt, db_path) -> None:
    session_id, route = await _session_with_route(rt)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("Done")
    assert await handle.wait() == "delivered"
    status = await rt.delivery_status(handle.delivery_id)
    assert (status.status, status.outbox_status, status.work_status) == ("sent", "sent",
                                                                         "completed")
    assert status.attempts == 1
    assert status.claimant == rt.store.claimant
    assert [o.delivery_id for o in route.delivered] == [handle.delivery_id]
    events = [t for (t,) in rows(db_path, "SELECT type FROM events WHERE delivery_id = ? "
                                          "ORDER BY event_seq", handle.delivery_id)]
    assert events == ["delivery.queued", "delivery.sending", "delivery.sent"]


async def test_outbound_carries_what_the_route_needs(rt) -> None:
    session_id, route = await _session_with_route(rt)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("hello", delivery_metadata={"reply_to": "m1"})
    await handle.wait()
    [outbound] = route.delivered
    assert outbound.session_id == session_id
    assert outbound.delivery_id == handle.delivery_id
    assert outbound.kind == "message"
    assert outbound.text == "hello"
    assert [b.as_dict() for b in outbound.blocks] == [{"type": "text", "text": "hello"}]
    assert outbound.channel == "web"
    assert dict(outbound.metadata) == {"reply_to": "m1"}
    assert outbound.seq == 1


async def test_a_failing_route_marks_the_delivery_failed_with_the_claims_attempt(rt) -> None:
    session_id, route = await _session_with_route(rt, fail=ConnectionError("platform down"))
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("x")
    assert await handle.wait() == "failed"
    status = await rt.delivery_status(handle.delivery_id)
    assert (status.status, status.work_status, status.attempts) == ("failed", "failed", 1)
    assert status.last_error == "ConnectionError: platform down"
    assert len(route.attempted) == 1  # no automatic retry
    assert rt.router.binding(session_id) is not None  # the router never unbinds by itself


async def test_without_a_route_a_delivery_is_unrouted_not_failed(rt) -> None:
    session_id = await rt.create_session(channel="web")
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("nobody listens")
    assert await handle.wait() == "unrouted"
    status = await rt.delivery_status(handle.delivery_id)
    # Its work item is not done (a requeue gives it back to its lane) and nobody received it:
    # not ``completed``, as a sent one's is.
    assert (status.status, status.attempts, status.work_status) == ("unrouted", 0, "unrouted")


async def test_a_bound_route_rejects_an_outbound_for_another_session(rt) -> None:
    mine, route = await _session_with_route(rt)
    other, other_route = await _session_with_route(rt)
    async with rt.open_turn(other) as ctx:
        handle = await ctx.output.send_text("for the other session")
    await handle.wait()
    [foreign] = other_route.delivered
    with pytest.raises(RouteMismatchError, match=other):
        await rt.router.binding(mine).deliver(foreign)
    assert route.delivered == []


async def test_wait_returns_delivered_only_once_sent_is_durable(rt) -> None:
    session_id, _ = await _session_with_route(rt)
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("x")
    assert await handle.wait() == "delivered"
    assert (await rt.delivery_status(handle.delivery_id)).outbox_status == "sent"


async def test_handle_status_goes_pending_scheduled_delivered(rt) -> None:
    session_id, route = await _session_with_route(rt)
    route.stall()
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("x")
        assert handle.status == "scheduled"
        await route.wait_attempted(1)
        assert handle.status == "scheduled"
        route.release()
    assert await handle.wait() == "delivered"
    assert handle.status == "delivered"


async def test_seq_is_per_session_and_contiguous_across_kinds(rt) -> None:
    a, _ = await _session_with_route(rt)
    b, _ = await _session_with_route(rt)
    async with rt.open_turn(a) as ctx_a, rt.open_turn(b) as ctx_b:
        handles = [await ctx_a.output.send_text("1"), await ctx_a.output.progress("2"),
                   await ctx_b.output.send_text("x"), await ctx_a.output.notice("3")]
    assert [h.seq for h in handles] == [1, 2, 1, 3]


async def test_unknown_delivery_id_is_a_lookup_error(rt) -> None:
    with pytest.raises(DeliveryNotFoundError):
        await rt.delivery_status("dlv_nope")
    with pytest.raises(LookupError):
        await rt.delivery_status("dlv_nope")


async def test_deliveries_filter_by_session_and_status(rt) -> None:
    routed, _ = await _session_with_route(rt)
    lonely = await rt.create_session(channel="web")
    async with rt.open_turn(routed) as ctx:
        sent = await ctx.output.send_text("a")
    async with rt.open_turn(lonely) as ctx:
        unrouted = await ctx.output.send_text("b")
    await sent.wait()
    await unrouted.wait()
    assert [d.delivery_id for d in await rt.deliveries(session_id=routed)] == [sent.delivery_id]
    assert [d.delivery_id for d in await rt.deliveries(status="unrouted")] == [
        unrouted.delivery_id]
    assert len(await rt.deliveries()) == 2


async def test_leaving_a_turn_never_waits_for_its_deliveries(rt) -> None:
    session_id, route = await _session_with_route(rt)
    route.stall()
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("slow")
    await route.wait_attempted(1)
    assert handle.status == "scheduled"  # the turn is over; the delivery is still running
    route.release()
    assert await handle.wait() == "delivered"


async def test_a_send_whose_caller_is_cancelled_after_commit_is_still_delivered(rt) -> None:
    session_id, route = await _session_with_route(rt)
    release = threading.Event()
    async with rt.open_turn(session_id) as ctx, trio.open_nursery() as nursery:
        # Hold the writer so the send is queued but not yet committed when we cancel it.
        # (Bounded, so a failing test cannot leave the writer thread blocked for ever.)
        nursery.start_soon(rt.store.commit, [Call(lambda conn: release.wait(timeout=30))])
        await trio.testing.wait_all_tasks_blocked()
        with trio.CancelScope() as scope:
            nursery.start_soon(_cancel_soon, scope)
            await ctx.output.send_text("committed anyway")
        release.set()
    assert scope.cancelled_caught
    [outbound] = await route.wait_delivered(1)
    assert outbound.text == "committed anyway"
    [status] = await rt.deliveries(session_id=session_id)
    assert status.outbox_status in ("sending", "sent")


async def _cancel_soon(scope: trio.CancelScope) -> None:
    await trio.testing.wait_all_tasks_blocked()
    scope.cancel()


async def test_wait_does_not_return_before_sent_is_committed(rt) -> None:
    session_id, route = await _session_with_route(rt)
    route.stall()
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("held at the writer")
    returned = trio.Event()
    outcome: list[str] = []

    async def waiter() -> None:
        outcome.append(await handle.wait())
        returned.set()

    with trio.fail_after(30):  # hang guard
        await route.wait_attempted(1)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            async with writer_gate(rt.store) as gate:
                route.release()  # the route accepts it; its ``sent`` queues behind the gate
                await route.wait_delivered(1)
                # Quiescence: the writer thread is held inside the gate, so every task waiting
                # on a write (the lane's ``sent``, the waiter) is blocked, not running.
                await trio.testing.wait_all_tasks_blocked()
                assert not returned.is_set()
                assert handle.status == "scheduled"
                assert (await rt.delivery_status(handle.delivery_id)).outbox_status == "sending"
                gate.release()
            await returned.wait()
    assert outcome == ["delivered"]
    assert (await rt.delivery_status(handle.delivery_id)).outbox_status == "sent"


class _AgentCrashed(Exception):
    pass


async def _send_two_then_end_the_turn(rt, session_id: str, route: MemoryRoute, ending: str,
                                      handles: list) -> None:
    async with rt.open_turn(session_id) as ctx:
        handles.append(await ctx.output.send_text("in flight"))
        handles.append(await ctx.output.send_text("queued behind it"))
        await route.wait_attempted(1)
        if ending == "raise":
            raise _AgentCrashed("the agent crashed")
        assert ctx.cancel("cancel_command")
        await trio.sleep_forever()  # cancelled at once by the turn's scope


@pytest.mark.parametrize(("ending", "turn_status"), [("cancel", "cancelled"),
                                                     ("raise", "failed")])
async def test_a_turn_that_does_not_complete_does_not_cancel_its_deliveries(
        rt, db_path, ending: str, turn_status: str) -> None:
    session_id, route = await _session_with_route(rt)
    route.stall()
    handles: list = []
    with trio.fail_after(30):  # hang guard
        with pytest.raises(_AgentCrashed) if ending == "raise" else contextlib.nullcontext():
            await _send_two_then_end_the_turn(rt, session_id, route, ending, handles)
        assert rows(db_path, "SELECT status FROM turns WHERE session_id = ?",
                    session_id) == [(turn_status,)]
        route.release()
        assert [await h.wait() for h in handles] == ["delivered", "delivered"]
    assert route.texts() == ["in flight", "queued behind it"]
    for handle in handles:
        status = await rt.delivery_status(handle.delivery_id)
        assert (status.status, status.outbox_status, status.attempts) == ("sent", "sent", 1)


async def test_handle_status_is_the_terminal_outcome_after_wait(rt) -> None:
    failing, _ = await _session_with_route(rt, fail=ConnectionError("platform down"))
    lonely = await rt.create_session(channel="web")
    async with rt.open_turn(failing) as ctx:
        failed = await ctx.output.send_text("x")
    async with rt.open_turn(lonely) as ctx:
        unrouted = await ctx.output.send_text("y")
    with trio.fail_after(30):  # hang guard
        assert await failed.wait() == "failed"
        assert await unrouted.wait() == "unrouted"
    assert failed.status == "failed"
    assert unrouted.status == "unrouted"


async def test_invisible_delivery_needs_no_route(rt) -> None:
    session_id = await rt.create_session(channel="web")  # no route is ever bound
    async with rt.open_turn(session_id) as ctx:
        handle = await ctx.output.send_text("remembered, not shown", visible=False)
    with trio.fail_after(30):  # hang guard
        assert await handle.wait() == "delivered"
    assert handle.status == "delivered"
    status = await rt.delivery_status(handle.delivery_id)
    assert (status.status, status.outbox_status, status.attempts) == ("sent", "sent", 0)
    [message] = await rt.history(session_id)
    assert (message.text, message.delivery_id, message.visible, message.policy) == (
        "remembered, not shown", handle.delivery_id, False, "persist")


async def test_invisible_progress_is_rejected_on_the_visible_field(rt, db_path) -> None:
    session_id, route = await _session_with_route(rt)
    async with rt.open_turn(session_id) as ctx:
        with pytest.raises(ValidationError) as caught:
            await ctx.output.progress("x", visible=False)
    assert caught.value.field == "visible"
    assert isinstance(caught.value, ValueError)
    assert rows(db_path, "SELECT count(*) FROM outbox") == [(0,)]
    assert route.attempted == []


async def test_a_route_error_is_seen_live_as_delivery_failed(rt) -> None:
    session_id, _ = await _session_with_route(rt, fail=ConnectionError("platform down"))
    seen: list = []

    async def follow(task_status=trio.TASK_STATUS_IGNORED) -> None:
        feed = rt.events(after_seq=0)  # from the start: nothing can be missed
        task_status.started()
        async for event in feed:
            if event.session_id == session_id and event.type.startswith("delivery."):
                seen.append(event)
                if event.type not in ("delivery.queued", "delivery.sending"):
                    return

    with trio.fail_after(30):  # hang guard
        async with trio.open_nursery() as nursery:
            await nursery.start(follow)
            await trio.testing.wait_all_tasks_blocked()  # the follower waits for a commit
            async with rt.open_turn(session_id) as ctx:
                handle = await ctx.output.send_text("x")
            assert await handle.wait() == "failed"
    assert [(e.type, e.delivery_id) for e in seen] == [
        ("delivery.queued", handle.delivery_id), ("delivery.sending", handle.delivery_id),
        ("delivery.failed", handle.delivery_id)]
    assert seen[-1].data["error"] == "ConnectionError: platform down"
    assert seen[-1].data["attempt"] == 1
