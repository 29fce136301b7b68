"""``tidings chat --url`` with piped input: a line accepted ``started`` before a drop, whose turn
ended while the chat was away. The chat never hears that end (its ``completed`` went to the
connection that dropped), and waited :data:`~tidings.supervisor._chat_ws._SETTLE` (30 s) for
any turn to run before it sent the next line. The welcome lists the turns running
(``running``): the line's is not among them, so the chat asks the gateway at once (its id
again, answered ``duplicate`` with ``running``) and, its turn ended, syncs its reply (replayed
after the reconnect) and sends the next line.

A line ``queued`` behind another turn is not in ``running`` either: asked about, it is
answered ``running`` (it waits to run) and waited for, not taken for ended (the next line
would have steered it).

A real gateway on the mock clock: the agent's ``slow`` turn waits for the test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio
import trio.testing

from tidings.channels import ChannelConfig, GatewayChannel, GatewayClient, GatewayConfig
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from ..real_time import fail_after_real
from .chat_doubles import ClientWrapper, HeldAgent
from .conftest import TOKEN, Transcript

CONVERSATION = "away"


class _Dropping(ClientWrapper):
    """A connection of :class:`_DropOnAccepted`: the chat hears the ``accepted`` of ``slow``,
    then the connection drops (the server side is killed)."""

    async def send(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "message":
            if frame.get("text") == "slow":
                self._owner.slow = frame["id"]
            elif frame.get("text") == "next":
                self._owner.next_sent = trio.current_time()
        await self._client.send(frame)

    async def receive(self) -> dict[str, Any]:
        owner = self._owner
        frame = await self._client.receive()
        if not owner.dropped and frame.get("type") == "accepted" \
                and frame.get("id") == owner.slow:
            owner.dropped = True
            owner.outcome = frame.get("outcome")
            [conn] = [conn for conn in owner.gateway.hubs[owner.conversation().key].connections
                      if conn.client == "tidings-chat"]
            conn.kill(4009, "too slow")
            if owner.release_at_drop:
                owner.agent.release.set()
        return frame


class _DropOnAccepted:
    """``GatewayClient`` whose first connection drops once ``slow`` is accepted; the next one
    connects once :meth:`away` returns, and says when it is welcomed (:attr:`back`,
    :attr:`welcomed`)."""

    def __init__(self, gateway: GatewayChannel, agent: HeldAgent, release_at_drop: bool) -> None:
        self.gateway, self.agent, self.release_at_drop = gateway, agent, release_at_drop
        self.slow: str | None = None
        self.outcome: Any = None
        self.dropped = False
        self.connects = 0
        self.back: float | None = None
        self.welcomed = trio.Event()
        self.next_sent: float | None = None

    def conversation(self) -> Any:
        return self.gateway.conversation_named(CONVERSATION)

    async def away(self) -> None:
        """While the chat is away: ``slow``'s turn ends (released at the drop), or, queued
        behind ``hold``, still waits to run."""
        assert self.slow is not None
        while self.release_at_drop and self.gateway.dispatch.unfinished(self.conversation(),
                                                                        self.slow):
            await trio.testing.wait_all_tasks_blocked()
            await trio.lowlevel.checkpoint()

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.connects += 1
        if self.connects > 1:
            await self.away()
        async with GatewayClient.connect(*args, **kwargs) as client:
            if self.connects > 1:
                self.back = trio.current_time()
                self.welcomed.set()
            yield _Dropping(client, self)


def _options(url: str) -> ChatOptions:
    return ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION, interactive=False)


async def _two_lines() -> AsyncIterator[str]:
    yield "slow\n"
    yield "next\n"


async def test_a_piped_line_whose_turn_ended_while_away_does_not_wait_30_s(
        rt, monkeypatch, autojump_clock) -> None:
    agent = HeldAgent("slow", "hold", suffix=" done")
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0), agent=agent)
    out, err = Transcript(), Transcript()
    try:
        with fail_after_real(30):
            async with gateway.serving() as port:
                dropping = _DropOnAccepted(gateway, agent, release_at_drop=True)
                monkeypatch.setattr(_chat_ws, "GatewayClient", dropping)
                code = await chat_over_websocket(_options(f"ws://127.0.0.1:{port}"),
                                                 _two_lines(), out=out, err=err)
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert code == 0, err.getvalue()
    assert dropping.dropped, err.getvalue()
    assert dropping.outcome == "started"
    assert dropping.connects == 2, err.getvalue()
    # the reply replayed after the reconnect comes first
    assert out.getvalue().splitlines() == ["slow done", "next"]
    assert dropping.back is not None
    assert dropping.next_sent is not None
    assert dropping.next_sent - dropping.back < _chat_ws._SETTLE  # asked, not 30 s idle


async def test_a_piped_line_queued_while_away_is_waited_for(
        rt, connect, is_frame, monkeypatch, autojump_clock) -> None:
    agent = HeldAgent("slow", "hold", suffix=" done")
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", dispatch_mode="followup"), agent=agent)
    out, err = Transcript(), Transcript()
    try:
        with fail_after_real(30):
            async with gateway.serving() as port, \
                    connect(f"ws://127.0.0.1:{port}", CONVERSATION) as other:
                held = await other.message("hold")
                await other.receive_until(is_frame("lifecycle", event="started",
                                                   message_id=held))
                dropping = _DropOnAccepted(gateway, agent, release_at_drop=False)
                released: list[float] = []
                monkeypatch.setattr(_chat_ws, "GatewayClient", dropping)

                async def release_late() -> None:
                    await dropping.welcomed.wait()
                    await trio.sleep(100)  # longer than the 30 s the chat gives up after
                    released.append(trio.current_time())
                    agent.release.set()

                async with trio.open_nursery() as nursery:
                    nursery.start_soon(release_late)
                    code = await chat_over_websocket(_options(f"ws://127.0.0.1:{port}"),
                                                     _two_lines(), out=out, err=err)
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert code == 0, err.getvalue()
    assert dropping.dropped, err.getvalue()
    assert dropping.outcome == "queued"
    # waited for: the next line went out once its turn had run, not when asked about it
    assert released
    assert dropping.next_sent is not None
    assert dropping.next_sent >= released[0]
    assert out.getvalue().splitlines() == ["hold done", "slow done", "next"]
