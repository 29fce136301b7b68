"""Holds (Dispatcher.hold_binds / hold_sessions): they end, they do not leak, they do not hold
up the runtime's stop."""

from __future__ import annotations

import pytest
import trio
import trio.testing

import tidings
from tidings.channels import GatewayClient, GatewayClosed
from tidings.testing import MemoryRoute, writer_gate

from .test_hunt_rebind_order import (
    HANG,
    TOKEN,
    _gateway,
    _pause,
    _texts,
    _unrouted,
    _until,
)


async def test_a_lane_waiting_on_a_manual_recovery_hold_does_not_hold_up_the_exit(
        db_path, workspace, leftovers, autojump_clock) -> None:
    """recover="manual", a send into a session with queued leftovers, and an exit before
    rt.recover(): the lane waits on the hold having claimed nothing, so the stop has nothing
    to let it finish; it waited the whole grace all the same."""
    left = await leftovers(queued=2, progress=0)
    route = MemoryRoute()
    async with tidings.open_runtime(db_path, workspace=workspace, recover="manual",
                                    grace=30.0) as rt:
        rt.router.bind(left.session_id, route)
        async with rt.open_turn(left.session_id) as ctx:
            handle = await ctx.output.send_text("new")
        await trio.testing.wait_all_tasks_blocked()
        lane = rt.dispatcher.lane(left.session_id)
        assert lane is not None
        assert lane.taking  # waiting on the hold
        started = trio.current_time()
    assert trio.current_time() - started < 30.0
    assert route.texts() == []
    async with tidings.open_runtime(db_path, workspace=workspace) as rt:
        assert (await rt.delivery_status(handle.delivery_id)).outbox_status in ("queued",
                                                                                 "unrouted")



async def test_a_row_whose_unrouted_write_outlives_its_crashed_lane_is_requeued_by_the_hello(
        rt, monkeypatch, stranded) -> None:
    """The lane's ``unrouted`` write of s1 is in the writer when the hello binds the session;
    the lane crashes while waiting for it (the write still commits). rt.unrouted_written()
    returned at the crash, not once the write had ended: the hello read no unrouted row, so
    s1 was not re-queued (it never came) and s2 went out alone."""
    async with _gateway(rt) as (gateway, url):
        key = gateway.conversation_named("c").key
        session_id, _ = await rt.resolve_conversation(gateway.config.name, key)
        with trio.fail_after(HANG):
            for text in ("s1", "s2"):
                await stranded(rt, session_id, text)
            resolved, bind = _pause(rt, monkeypatch, "resolve_conversation", after=True)
            waiting, crash = _pause(rt, monkeypatch, "unrouted_written")
            texts: list[str] = []
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_texts, url, 2, texts)
                await resolved.wait()
                async with writer_gate(rt.store) as gate:
                    rt.dispatcher.kick(session_id)

                    def unrouting() -> bool:  # s1's ``unrouted`` write waits for the writer
                        lane = rt.dispatcher.lane(session_id)
                        return lane is not None and lane.unrouting is not None

                    await _until(unrouting)
                    bind.set()
                    await waiting.wait()  # bound and held; about to wait for s1's write
                    lane = rt.dispatcher.lane(session_id)
                    assert lane is not None
                    assert lane.name is not None
                    assert rt.dispatcher.supervisor.inject_cancel(lane.name)
                    await _until(lambda: rt.dispatcher.supervisor.restart_log)
                    crash.set()
                    await trio.testing.wait_all_tasks_blocked()  # the hello read, or waits
                    gate.release()
                await _until(lambda: len(texts) >= 1)
                assert texts[0] == "s1"
    assert texts == ["s1", "s2"]


async def test_a_hello_refused_after_its_bind_leaves_the_unrouted_rows_for_the_next_hello(
        rt) -> None:
    """A hello naming a session that is not its conversation's is refused after the
    conversation's session was bound to the gateway and before its ``unrouted`` rows were
    handed back. The session stayed bound, so the next hello took it for one already caught
    up: u1 stayed ``unrouted`` and only the newer row came."""
    async with _gateway(rt) as (gateway, url):
        key = gateway.conversation_named("c").key
        session_id, _ = await rt.resolve_conversation(gateway.config.name, key)
        with trio.fail_after(HANG):
            await _unrouted(rt, session_id, "u1")
            with pytest.raises(GatewayClosed):
                async with GatewayClient.connect(url, token=TOKEN, conversation="c",
                                                 session_id="session_not_of_c"):
                    pass
            async with rt.open_turn(session_id) as ctx:
                await ctx.output.send_text("new")
            texts: list[str] = []
            await _texts(url, 2, texts)
    assert texts == ["u1", "new"]
