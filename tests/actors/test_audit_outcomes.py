"""Audit of issue 3's pinned outcome sentences in the cases the older tests leave out:
``wait()`` returning ``unrouted`` only once it is committed, no retry and no unbinding after
failures of several kinds, last-bind-wins with one route object bound twice, and a stop with
several sessions in flight (at most one ``unknown`` each)."""

from __future__ import annotations

import trio
import trio.testing

import tidings
from tidings.testing import MemoryRoute, writer_gate

from .conftest import rows, stalled_session


async def test_wait_returns_unrouted_only_once_it_is_committed(rt, autojump_clock) -> None:
    session_id, route = await stalled_session(rt)
    token = rt.router.bind(session_id, route)
    async with rt.open_turn(session_id) as ctx:
        first = await ctx.output.send_text("held in deliver")
        second = await ctx.output.send_text("nobody left")
    returned = trio.Event()
    seen: list = []

    async def waiter() -> None:
        outcome = await second.wait()
        seen.append((outcome, (await rt.delivery_status(second.delivery_id)).outbox_status))
        returned.set()

    with trio.fail_after(30):  # hang guard
        await route.wait_attempted(1)
        assert rt.router.unbind(token)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            async with writer_gate(rt.store) as gate:
                route.release()  # ``sent`` of the first, ``unrouted`` of the second: gated
                await route.wait_delivered(1)
                await trio.testing.wait_all_tasks_blocked()
                assert not returned.is_set()
                assert second.status == "scheduled"
                assert (await rt.delivery_status(second.delivery_id)).outbox_status == "queued"
                gate.release()
            await returned.wait()
        assert await first.wait() == "delivered"
    assert seen == [("unrouted", "unrouted")]


async def test_failures_of_every_kind_are_failed_once_and_the_route_stays_bound(
        rt, db_path, autojump_clock) -> None:
    errors = {"conn": ConnectionError("reset by peer"), "value": ValueError("bad payload"),
              "group": ExceptionGroup("adapter", [TimeoutError("platform slow")])}

    def fail(outbound):
        return errors.get(outbound.text)

    session_id = await rt.create_session(channel="web")
    route = MemoryRoute(fail=fail)
    rt.router.bind(session_id, route)
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(session_id) as ctx:
            handles = {text: await ctx.output.send_text(text) for text in (*errors, "fine")}
        outcomes = {text: await handle.wait() for text, handle in handles.items()}
    assert outcomes == {"conn": "failed", "value": "failed", "group": "failed",
                        "fine": "delivered"}
    assert rt.router.binding(session_id).route is route
    for text, words in (("conn", "reset by peer"), ("value", "bad payload"),
                        ("group", "platform slow")):
        status = await rt.delivery_status(handles[text].delivery_id)
        assert (status.status, status.attempts) == ("failed", 1), text
        assert words in status.last_error, text
    assert [o.text for o in route.attempted] == ["conn", "value", "group", "fine"]
    assert rows(db_path, "SELECT count(*) FROM events WHERE type = 'delivery.sending'") == [(4,)]


async def test_the_same_route_bound_twice_keeps_only_the_newest_token(rt,
                                                                      autojump_clock) -> None:
    one = await rt.create_session(channel="web")
    two = await rt.create_session(channel="web")
    route = MemoryRoute()
    old = rt.router.bind(one, route)
    new = rt.router.bind(one, route)
    other = rt.router.bind(two, route)  # one route for two sessions: two bindings
    assert old != new
    assert rt.router.unbind(old) is False
    assert rt.router.binding(one).route is route
    assert rt.router.unbind(other) is True  # the other session's token removes its own only
    assert rt.router.binding(one).route is route
    assert rt.router.binding(two) is None
    with trio.fail_after(30):  # hang guard
        async with rt.open_turn(one) as ctx:
            handle = await ctx.output.send_text("still bound")
        assert await handle.wait() == "delivered"
        assert rt.router.unbind(new) is True
        assert rt.router.unbind(new) is False
        again = rt.router.bind(one, route)
        assert rt.router.unbind(new) is False  # stale after a later bind too
        assert rt.router.binding(one).route is route
        assert rt.router.unbind(again) is True


async def test_a_stop_leaves_at_most_one_unknown_per_session(db_path, workspace,
                                                             autojump_clock) -> None:
    with trio.fail_after(60):  # hang guard
        async with tidings.open_runtime(db_path, workspace=workspace, grace=0.5) as rt:
            sessions = []
            for _ in range(3):
                session_id, route = await stalled_session(rt)
                async with rt.open_turn(session_id) as ctx:
                    for i in range(3):
                        await ctx.output.send_text(f"m{i}")
                await route.wait_attempted(1)
                sessions.append(session_id)
        by_session = {s: rows(db_path, "SELECT status FROM outbox WHERE session_id = ? "
                                       "ORDER BY seq", s) for s in sessions}
        assert all(v == [("sending",), ("queued",), ("queued",)] for v in by_session.values())
        routes = {s: MemoryRoute() for s in sessions}
        async with tidings.open_runtime(db_path, workspace=workspace,
                                        recover="manual") as rt:
            for s, route in routes.items():
                rt.router.bind(s, route)
            await rt.recover()
            for route in routes.values():
                await route.wait_delivered(2)
    for s in sessions:
        assert rows(db_path, "SELECT status, attempts FROM outbox WHERE session_id = ? "
                             "ORDER BY seq", s) == [("unknown", 1), ("sent", 1), ("sent", 1)]
        assert routes[s].texts() == ["m1", "m2"]
