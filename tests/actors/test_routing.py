"""Routing strictly by session: binds, child sessions, prompts, isolation and order."""

from __future__ import annotations

import gc
import tracemalloc

import pytest
import trio
import trio.testing

import tidings
from tidings.actors import ApprovalDecision
from tidings.actors._events import _newest_seq
from tidings.errors import SessionNotFoundError, ValidationError
from tidings.store import OutboxInsert, queries
from tidings.testing import MemoryRoute

from ..real_time import fail_after_real


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
        db_path, workspace, autojump_clock) -> None:
    class Silent(MemoryRoute):
        async def request_approval(self, request):
            await trio.sleep_forever()

    # The runtime's clock is the mock clock's: the expiry is measured in its seconds.
    async with tidings.open_runtime(db_path, workspace=workspace,
                                    clock=trio.current_time) as rt:
        session_id = await rt.create_session(channel="web")
        rt.router.bind(session_id, Silent())
        async with rt.open_turn(session_id) as ctx:
            asked = trio.current_time()
            decision = await ctx.request_approval("deploy", expires_in=30)
            answered = trio.current_time()
    assert decision == ApprovalDecision(False, "expired")
    assert 30 <= answered - asked < 60  # at its expiry, not at once (nor at a later timer)


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
    # Several times the lane mailbox (and four refill batches past it): the rest waits in
    # the outbox only. Each send is a durable commit, so no more than that.
    count = 3 * rt.dispatcher.mailbox_size
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
    # "From now on" is the newest event when the feed first reads, in a worker thread: the
    # send waits for that read to return ("all tasks blocked" held while it ran, and a send
    # committed before it would have been skipped as old).
    started = trio.Event()
    real_read = rt.store.read

    async def read(fn, *args):
        result = await real_read(fn, *args)
        if fn is _newest_seq:
            started.set()
        return result

    rt.store.read = read

    async def follow(task_status=trio.TASK_STATUS_IGNORED) -> None:
        feed = rt.events()
        task_status.started()
        async for event in feed:
            seen.append((event.type, event.delivery_id))
            if event.type == "delivery.sent":
                return

    async with trio.open_nursery() as nursery:
        await nursery.start(follow)
        with trio.fail_after(10):  # a guard against hanging, not a wait
            await started.wait()
        handle = await _send(rt, session_id, "x")
    assert [event for event in seen if event[1] is not None][-3:] == [
        ("delivery.queued", handle.delivery_id), ("delivery.sending", handle.delivery_id),
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
    with fail_after_real(60):  # hang guard: mock_clock moves only at jump()
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


async def test_an_idempotency_key_of_a_failed_delivery_never_sends_it_again(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(fail=lambda o: ConnectionError("down") if o.text == "x" else None)
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard: a lost or re-queued row would leave wait() hanging
        async with rt.open_turn(session_id) as ctx:
            first = await ctx.output.send_text("x", idempotency_key="k")
            assert await first.wait() == "failed"
            again = await ctx.output.send_text("x, retried", idempotency_key="k")
            assert again.delivery_id == first.delivery_id
            assert await again.wait() == "failed"
            # Per-session order: anything the repeat scheduled would be attempted before this.
            after = await ctx.output.send_text("after")
            assert await after.wait() == "delivered"
    assert [o.delivery_id for o in route.attempted] == [first.delivery_id, after.delivery_id]
    status = await rt.delivery_status(first.delivery_id)
    assert (status.status, status.outbox_status, status.attempts) == ("failed", "failed", 1)
    assert [d.delivery_id for d in await rt.deliveries(session_id=session_id)] == [
        first.delivery_id, after.delivery_id]


@pytest.mark.parametrize(("fail", "outcome", "status"), [
    (None, "delivered", "sent"), (ConnectionError("down"), "failed", "failed")])
async def test_an_idempotency_key_holds_across_a_restart(db_path, workspace, fail, outcome,
                                                         status) -> None:
    route = MemoryRoute(fail=fail)
    with trio.fail_after(30):  # hang guard: a handle that is never resolved would hang wait()
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            session_id = await rt.create_session(channel="web")
            rt.router.bind(session_id, route)
            async with rt.open_turn(session_id) as ctx:
                first = await ctx.output.send_text("once", idempotency_key="k")
            assert await first.wait() == outcome
        async with tidings.open_runtime(db_path, workspace=workspace) as rt:
            async with rt.open_turn(session_id) as ctx:  # no route bound: a resend is unrouted
                again = await ctx.output.send_text("once, after the restart",
                                                   idempotency_key="k")
            assert again.delivery_id == first.delivery_id
            assert await again.wait() == outcome
            [delivery] = await rt.deliveries(session_id=session_id)
            [message] = await rt.history(session_id)
    assert (delivery.delivery_id, delivery.status, delivery.attempts) == (
        first.delivery_id, status, 1)
    assert (message.text, message.delivery_id) == ("once", first.delivery_id)
    assert [o.text for o in route.attempted] == ["once"]


async def test_concurrent_sends_with_one_idempotency_key_share_one_delivery(rt) -> None:
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    # Concurrent senders reach this interleaving on their own now and then; the wrappers make
    # it certain. Each key lookup is held until both have read (nothing there yet) ...
    real_read, real_commit = rt.store.read, rt.store.commit
    looked_up, sends = 0, 0
    both_looked, loser_settled = trio.Event(), trio.Event()

    async def read(fn, *args):
        nonlocal looked_up
        result = await real_read(fn, *args)
        if fn is queries.find_idempotent:
            looked_up += 1
            if looked_up == 2:
                both_looked.set()
            await both_looked.wait()
        return result

    # ... and the first send to commit leaves enqueue() only once the other has settled.
    async def commit(ops, **kwargs):
        nonlocal sends
        if not any(isinstance(op, OutboxInsert) for op in ops):
            return await real_commit(ops, **kwargs)
        sends += 1
        if sends > 1:
            try:
                return await real_commit(ops, **kwargs)
            finally:
                loser_settled.set()
        results = await real_commit(ops, **kwargs)
        await loser_settled.wait()
        return results

    rt.store.read, rt.store.commit = read, commit
    handles = []
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:

            async def send(text: str) -> None:
                try:
                    handles.append(await ctx.output.send_text(text, idempotency_key="k"))
                finally:
                    loser_settled.set()  # also when a send never commits at all

            async with trio.open_nursery() as nursery:
                nursery.start_soon(send, "a")
                nursery.start_soon(send, "b")
        [delivery] = await rt.deliveries(session_id=session_id)
        assert [h.delivery_id for h in handles] == [delivery.delivery_id] * 2
        assert [await h.wait() for h in handles] == ["delivered"] * 2
    assert len(route.delivered) == 1


async def test_a_send_that_loses_the_key_to_a_finished_send_returns_that_delivery(rt) -> None:
    """The other order: the first send of the key has finished (its pending entry is gone)
    when the second, whose lookup ran before that commit, writes: its write conflicts, and it
    must answer with the first delivery, never with its own unwritten one."""
    session_id = await rt.create_session(channel="web")
    route = MemoryRoute()
    rt.router.bind(session_id, route)
    real_read = rt.store.read
    lookups = 0
    first_looked, second_looked, first_done = trio.Event(), trio.Event(), trio.Event()

    async def read(fn, *args):
        nonlocal lookups
        if fn is not queries.find_idempotent:
            return await real_read(fn, *args)
        lookups += 1
        mine = lookups
        result = await real_read(fn, *args)
        if mine == 1:  # the second send's lookup runs before the first writes ...
            first_looked.set()
            await second_looked.wait()
        elif mine == 2:  # ... and returns (nothing found) only once the first is done
            second_looked.set()
            await first_done.wait()
        return result

    rt.store.read = read
    handles = {}
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:

            async def first() -> None:
                handles["first"] = await ctx.output.send_text("a", idempotency_key="k")
                first_done.set()

            async def second() -> None:
                handles["second"] = await ctx.output.send_text("b", idempotency_key="k")

            async with trio.open_nursery() as nursery:
                nursery.start_soon(first)
                await first_looked.wait()
                nursery.start_soon(second)
        [delivery] = await rt.deliveries(session_id=session_id)
        assert handles["second"].delivery_id == handles["first"].delivery_id == (
            delivery.delivery_id)
        assert await handles["second"].wait() == "delivered"
    assert route.texts() == ["a"]


class _OddRoute:
    def __init__(self, **attributes: object) -> None:
        self.__dict__.update(attributes)

    async def deliver(self, outbound) -> None:
        pass


@pytest.mark.parametrize(("attributes", "field"), [({"ack_window": -1}, "ack_window"),
                                                   ({"ack_window": 0.5}, "ack_window"),
                                                   ({"ack_window": "8"}, "ack_window"),
                                                   ({"capabilities": "image"}, "capabilities"),
                                                   ({"capabilities": [1, 2]}, "capabilities"),
                                                   ({"capabilities": {"text", "images"}},
                                                    "capabilities")])
async def test_bind_refuses_a_route_with_a_bad_ack_window_or_capabilities(
        rt, attributes, field) -> None:
    """A negative ack window would hold the session's deliveries forever, a string of
    capabilities would read as its letters, a misspelt block type would silently degrade
    every block of that type: refused by name, and the live route stays."""
    session_id = await rt.create_session(channel="web")
    live = MemoryRoute()
    rt.router.bind(session_id, live)
    with pytest.raises(ValidationError) as caught:
        rt.router.bind(session_id, _OddRoute(**attributes))
    assert caught.value.field == field
    assert rt.router.binding(session_id).route is live
