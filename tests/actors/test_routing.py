"""Routing strictly by session: binds, child sessions, prompts, isolation and order."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
import trio
import trio.testing

from tidings.actors import ApprovalDecision
from tidings.errors import SessionNotFoundError, ValidationError
from tidings.testing import MemoryRoute


async def _send(rt, session_id: str, text: str):
    async with rt.open_turn(session_id) as ctx:
        return await ctx.output.send_text(text)


async def test_the_last_bind_wins_and_a_stale_token_removes_nothing(rt) -> None:
    session_id = await rt.create_session(channel="web")
    first, second = MemoryRoute(), MemoryRoute()
    old = rt.router.bind(session_id, first)
    new = rt.router.bind(session_id, second)
    assert rt.router.unbind(old) is False  # stale: the newer binding stays
    assert await (await _send(rt, session_id, "to the newest")).wait() == "delivered"
    assert (first.delivered, second.texts()) == ([], ["to the newest"])
    assert rt.router.unbind(new) is True
    assert rt.router.unbind(new) is False  # idempotent
    assert await (await _send(rt, session_id, "nobody")).wait() == "unrouted"


async def test_bind_rejects_things_that_are_not_routes(rt) -> None:
    with pytest.raises(ValidationError, match="deliver"):
        rt.router.bind("session_x", object())


async def test_child_output_reaches_only_a_route_bound_to_the_child(rt) -> None:
    parent = await rt.create_session(channel="web")
    child = await rt.create_session(channel="web", parent_session_id=parent)
    assert child.startswith("session_child_")
    parent_route = MemoryRoute()
    rt.router.bind(parent, parent_route)
    assert await (await _send(rt, child, "child, unbound")).wait() == "unrouted"
    child_route = MemoryRoute()
    rt.router.bind(child, child_route)
    assert await (await _send(rt, child, "child, bound")).wait() == "delivered"
    assert parent_route.delivered == []
    assert child_route.texts() == ["child, bound"]


async def test_a_child_needs_an_existing_parent(rt) -> None:
    with pytest.raises(SessionNotFoundError):
        await rt.create_session(channel="web", parent_session_id="session_missing")
    with pytest.raises(LookupError):
        async with rt.open_turn("session_missing"):
            pass


async def test_prompts_and_approvals_route_by_session_and_fail_closed(rt) -> None:
    session_id = await rt.create_session(channel="web")
    other = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.answers.append("blue")
    route.decisions.append("allow")
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        answer = await ctx.prompt_user("Favourite colour?")
        decision = await ctx.request_approval("delete_branch", details={"branch": "old"})
    assert (answer.text, answer.answered) == ("blue", True)
    assert decision == ApprovalDecision(True)
    assert route.prompts[0].session_id == session_id
    assert dict(route.approvals[0].details) == {"branch": "old"}
    async with rt.open_turn(other) as ctx:
        assert await ctx.request_approval("deploy") == ApprovalDecision(
            False, "no_interactive_route")
        assert (await ctx.prompt_user("anyone?")).reason == "no_interactive_route"


async def test_an_approval_without_a_decision_before_expiry_is_denied(
        rt, autojump_clock) -> None:
    session_id = await rt.create_session(channel="web")

    class Silent(MemoryRoute):
        async def request_approval(self, request):
            await trio.sleep_forever()

    rt.router.bind(session_id, Silent())
    rt.router._clock = trio.current_time  # expiry measured on the mock clock
    async with rt.open_turn(session_id) as ctx:
        ctx.runtime.store.clock = trio.current_time
        decision = await ctx.request_approval("deploy", expires_in=30)
    assert decision == ApprovalDecision(False, "expired")


async def test_a_stuck_route_does_not_delay_other_sessions(rt) -> None:
    stuck_session = await rt.create_session(channel="web")
    stuck = MemoryRoute()
    stuck.stall()
    rt.router.bind(stuck_session, stuck)
    free_session = await rt.create_session(channel="web")
    free = MemoryRoute()
    rt.router.bind(free_session, free)
    blocked = [await _send(rt, stuck_session, f"stuck {i}") for i in range(3)]
    await stuck.wait_attempted(1)
    handles = [await _send(rt, free_session, f"free {i}") for i in range(20)]
    assert [await h.wait() for h in handles] == ["delivered"] * 20
    assert [h.status for h in blocked] == ["scheduled"] * 3
    stuck.release()
    assert [await h.wait() for h in blocked] == ["delivered"] * 3


async def test_a_backlog_beyond_the_mailbox_is_delivered_in_order_from_the_outbox(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    route.stall()
    rt.router.bind(session_id, route)
    count = 300  # several times the lane mailbox: the rest waits in the outbox only
    async with rt.open_turn(session_id) as ctx:
        handles = [await ctx.output.send_text(f"m{i}", history_policy="transient")
                   for i in range(count)]
    lane = rt.dispatcher.lane(session_id)
    assert lane is not None
    assert lane.overflow
    route.release()
    assert [await h.wait() for h in handles] == ["delivered"] * count
    assert route.texts() == [f"m{i}" for i in range(count)]
    assert [o.seq for o in route.delivered] == list(range(1, count + 1))


async def test_per_session_order_holds_across_concurrent_turns(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    handles = []

    async def turn(n: int) -> None:
        async with rt.open_turn(session_id, mode="parallel") as ctx:
            for i in range(10):
                handles.append(await ctx.output.send_text(f"{n}.{i}"))

    async with trio.open_nursery() as nursery:
        for n in range(5):
            nursery.start_soon(turn, n)
    for handle in handles:
        await handle.wait()
    seqs = [o.seq for o in route.delivered]
    assert seqs == sorted(seqs) == list(range(1, 51))


async def test_an_idempotency_key_returns_the_original_delivery(rt, db_path) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        first = await ctx.output.send_text("once", idempotency_key="k1")
        again = await ctx.output.send_text("once more?", idempotency_key="k1")
        await first.wait()
        later = await ctx.output.send_text("and again", idempotency_key="k1")
    assert first.delivery_id == again.delivery_id == later.delivery_id
    assert await later.wait() == "delivered"
    assert route.texts() == ["once"]
    assert len(await rt.deliveries(session_id=session_id)) == 1
    assert len(await rt.history(session_id)) == 1


async def test_events_follow_every_state_change_live(rt) -> None:
    session_id = await rt.create_session(channel="web")
    rt.router.bind(session_id, MemoryRoute())
    seen: list[tuple[str, str | None]] = []

    async def follow(task_status=trio.TASK_STATUS_IGNORED) -> None:
        feed = rt.events()
        task_status.started()
        async for event in feed:
            seen.append((event.type, event.delivery_id))
            if event.type == "delivery.sent":
                return

    async with trio.open_nursery() as nursery:
        await nursery.start(follow)
        await trio.testing.wait_all_tasks_blocked()
        handle = await _send(rt, session_id, "x")
    assert seen[-3:] == [("delivery.queued", handle.delivery_id),
                         ("delivery.sending", handle.delivery_id),
                         ("delivery.sent", handle.delivery_id)]


async def test_twenty_thousand_bound_routes_cost_under_ten_kilobytes_each(rt) -> None:
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        routes = [MemoryRoute.__new__(MemoryRoute) for _ in range(20_000)]
        middle = tracemalloc.get_traced_memory()[0]
        tokens = [rt.router.bind(f"session_{i}", route) for i, route in enumerate(routes)]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    per_binding = (after - middle) / len(tokens)
    assert per_binding < 10_240, per_binding
    assert before < middle
    assert len(rt.router) == 20_000


async def test_an_idle_lane_lingers_then_exits_and_a_new_one_starts_on_demand(
        rt, mock_clock) -> None:
    # A manual clock: the writer's real I/O must not move time (an autojump clock would
    # jump to the janitor's deadlines whenever the loop waits on the writer).
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    assert await (await _send(rt, session_id, "first")).wait() == "delivered"
    assert rt.dispatcher.statistics().running == 1  # kept for the next message
    mock_clock.jump(rt.dispatcher.linger * 2 + 1)  # past the janitor's next round
    await trio.testing.wait_all_tasks_blocked()
    assert rt.dispatcher.statistics().running == 0
    assert rt.dispatcher.lane(session_id) is None
    assert await (await _send(rt, session_id, "second")).wait() == "delivered"
    assert route.texts() == ["first", "second"]
