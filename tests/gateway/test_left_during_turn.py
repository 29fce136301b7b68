"""A client that leaves while its turn runs: the reply comes with nobody connected.

The gateway held such a reply in ``deliver()`` until a client of the conversation came back:
the conversation kept its hub, its binding and its session's lane (blocked in that call) for
as long as the server ran, and was never evicted past ``idle_conversations`` (it was not
idle: a delivery was in hand). A server whose users close the tab while the agent thinks grew
by one stuck conversation each. The reply is now ``unrouted`` at once, as a row written in an
evicted conversation is, and the client's next hello (same conversation NAME) hands it back:
sent once, in seq order before anything newer, with or without ``after_seq``."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from tidings.actors import Runtime
from tidings.channels import GatewayChannel, GatewayClient

from .conftest import TOKEN, DeliverParking, frame_is, serving_gateway


class _HeldAgent:
    """Replies ``reply to <text>`` once :attr:`go` is set."""

    def __init__(self) -> None:
        self.go = trio.Event()

    async def run(self, turn: Any) -> None:
        await self.go.wait()
        await turn.send_chunk(f"reply to {turn.text}")


class _FewIdle(GatewayChannel):
    idle_conversations = 1


def _connect(url: str, name: str, **hello: Any) -> Any:
    return GatewayClient.connect(url, token=TOKEN, conversation=name, **hello)


async def _leave_during_turn(url: str, name: str) -> str:
    """Say ``hi <name>``, see its turn start, leave before the reply; the session id."""
    async with _connect(url, name) as client:
        await client.message(f"hi {name}")
        await client.receive_until(frame_is("lifecycle", event="started"))
        return client.session_id


async def _reply_settled(rt: Runtime, gateway: GatewayChannel, name: str,
                         session_id: str) -> str:
    """Until the reply in *session_id* is ``unrouted`` or held in ``deliver()`` for a client
    (how the gateway kept it before): which of the two."""
    key = gateway.conversation_named(name).key
    while True:
        if await rt.stored_deliveries(session_id, kinds=("message",),
                                      statuses=("unrouted",)):
            return "unrouted"
        hub = gateway.hubs.get(key)
        if hub is not None and hub.waiting:
            return "held in deliver()"
        await trio.testing.wait_all_tasks_blocked()
        await trio.lowlevel.checkpoint()


async def _texts_before_marker(rt: Runtime, client: GatewayClient) -> list[tuple[int, str]]:
    """The deliveries' (seq, text) the connection gets before a row the host writes now in
    its session (so after everything written before), which ends the list."""
    await rt.notify(client.session_id, "marker")
    frames = await client.receive_until(frame_is("delivery", text="marker"))
    got = [(f["seq"], f["text"]) for f in frames if f["type"] == "delivery"]
    assert got[-1][1] == "marker"
    return got[:-1]


async def test_conversations_whose_clients_left_during_a_turn_are_evicted(rt) -> None:
    agent = _HeldAgent()
    names = [f"user-{n}" for n in range(4)]
    with trio.fail_after(60):  # hang guard
        async with serving_gateway(rt, agent, gateway_class=_FewIdle) as (gateway, url):
            sessions = [await _leave_during_turn(url, name) for name in names]
            agent.go.set()
            for name, session_id in zip(names, sessions, strict=True):
                assert await _reply_settled(rt, gateway, name, session_id) == "unrouted"
            assert not gateway.hubs  # no conversation is held for a client to come
            async with _connect(url, "visitor") as visitor:  # a hold past the cap evicts
                await visitor.message("hello")
                await visitor.receive_until(frame_is("delivery", kind="message"))
                assert len(gateway.directory.sessions()) <= 2
                assert all(rt.router.binding(sid) is None for sid in sessions)
                assert len(rt.router) <= 2
            for n, (name, session_id) in enumerate(zip(names, sessions, strict=True)):
                hello = {"after_seq": 0, "session_id": session_id} if n % 2 else {}
                async with _connect(url, name, **hello) as client:
                    assert client.session_id == session_id
                    got = await _texts_before_marker(rt, client)
                    assert [text for _, text in got] == [f"reply to hi {name}"]


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "after_seq"])
async def test_a_reply_whose_client_left_reaches_the_next_hello_once_in_order(
        rt, resume: bool) -> None:
    agent = _HeldAgent()
    with trio.fail_after(60):  # hang guard
        async with serving_gateway(rt, agent) as (gateway, url):
            session_id = await _leave_during_turn(url, "alpha")
            agent.go.set()
            assert await _reply_settled(rt, gateway, "alpha", session_id) == "unrouted"
            assert not gateway.hubs
            later = await rt.notify(session_id, "later")  # behind the reply, not before it
            assert await later.wait() == "unrouted"
            hello = {"after_seq": 0, "session_id": session_id} if resume else {}
            async with _connect(url, "alpha", **hello) as client:
                got = await _texts_before_marker(rt, client)
                assert [text for _, text in got] == ["reply to hi alpha", "later"]
                assert [seq for seq, _ in got] == sorted(seq for seq, _ in got)
                assert await client.message("again")
                frames = await client.receive_until(frame_is("delivery", kind="message",
                                                             text="reply to again"))
                assert [f["text"] for f in frames if f["type"] == "delivery"] == [
                    "reply to again"]
            async with _connect(url, "alpha") as client:  # nothing comes twice
                assert await _texts_before_marker(rt, client) == []


async def _left_with_reply_unrouted(rt: Runtime, gateway: GatewayChannel, url: str,
                                    agent: _HeldAgent) -> str:
    """Conversation ``alpha``'s client left during its turn, whose reply went ``unrouted``;
    the session id."""
    session_id = await _leave_during_turn(url, "alpha")
    agent.go.set()
    assert await _reply_settled(rt, gateway, "alpha", session_id) == "unrouted"
    return session_id


@pytest.mark.parametrize("pause_in", ["unrouted_sessions", "last_seq"],
                         ids=["before_hand_back", "after_hand_back"])
async def test_a_row_written_while_the_hello_hands_back_comes_after_those_rows(
        rt, monkeypatch, pause_in: str) -> None:
    """The hello's conversation is pinned from before it hands the rows back until its
    connection joins: a row written meanwhile waits (its session is held), and comes after
    them. Not held, it was handed to ``deliver()`` and went to the connection as it joined,
    before the reply the hello had just handed back to the lane."""
    agent = _HeldAgent()
    entered, go = trio.Event(), trio.Event()
    original = getattr(rt, pause_in)

    async def paused(*args: Any, **kwargs: Any) -> Any:
        if not entered.is_set():
            entered.set()
            await go.wait()
        return await original(*args, **kwargs)

    with trio.fail_after(60):  # hang guard
        async with serving_gateway(rt, agent) as (gateway, url):
            session_id = await _left_with_reply_unrouted(rt, gateway, url, agent)
            monkeypatch.setattr(rt, pause_in, paused)
            got: list[str] = []
            async with trio.open_nursery() as nursery:
                async def back() -> None:
                    async with _connect(url, "alpha") as client:
                        frames = await client.receive_until(frame_is("delivery",
                                                                     text="during"))
                        got.extend(f["text"] for f in frames if f["type"] == "delivery")

                nursery.start_soon(back)
                await entered.wait()
                await rt.notify(session_id, "during")
                while not ((lane := rt.dispatcher.lane(session_id)) is not None
                           and (lane.waiting or lane.delivering)):
                    await trio.testing.wait_all_tasks_blocked()
                    await trio.lowlevel.checkpoint()
                go.set()
            assert got == ["reply to hi alpha", "during"]


async def test_a_row_in_deliver_while_a_whole_hello_runs_comes_after_the_rows_handed_back(
        rt, monkeypatch) -> None:
    """A row whose ``deliver()`` began before a hello, parked at its first schedule point
    until that hello has handed the session's ``unrouted`` rows back and joined: it goes back
    in line behind them rather than to the new connection first. As in
    tests/gateway/test_history_seq_deliver_started.py, the lane's task is parked there for
    certain (``trio.lowlevel.checkpoint`` wrapped, for that task only)."""
    agent = _HeldAgent()
    parking = DeliverParking(rt)

    with trio.fail_after(60):  # hang guard
        async with serving_gateway(rt, agent) as (gateway, url):
            session_id = parking.session_id = await _left_with_reply_unrouted(
                rt, gateway, url, agent)
            monkeypatch.setattr(trio.lowlevel, "checkpoint", parking.checkpoint)
            news = await rt.notify(session_id, "news")
            await parking.parked.wait()  # in deliver(), its session's rows not handed back yet
            async with _connect(url, "alpha") as client:
                parking.go.set()
                frames = await client.receive_until(frame_is("delivery", text="news"))
                assert [f["text"] for f in frames if f["type"] == "delivery"] == [
                    "reply to hi alpha", "news"]
            assert await news.wait() == "delivered"
