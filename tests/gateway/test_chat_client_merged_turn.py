"""``tidings chat --url`` with piped input waits for its line's turn to end: a line merged into
a turn whose lifecycle frames carry another message's id (the newest merged into it: here
another device's, in ``collect`` mode) never hears its own end. The chat waited for that
turn, then :data:`~tidings.supervisor._chat_ws._SETTLE` (30 s) more for an end that never
comes, then sent its next line without waiting for the reply's delivery. Once no turn runs
any more it now asks the gateway (its id again, answered ``duplicate`` with ``running``)
whether the line's turn has ended.

A real gateway on the mock clock: ``hold`` waits for the test; anything else is echoed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import trio

from tidings.channels import ChannelConfig, GatewayChannel, GatewayConfig
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from ..real_time import fail_after_real
from .chat_doubles import ClientWrapper, HeldAgent, WrappingConnector
from .conftest import TOKEN, Transcript

CONVERSATION = "merged"


class _Watched(ClientWrapper):
    """The chat's connection: when its line ``mine`` was accepted, and when it sent ``next``
    (trio's clock)."""

    async def send(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "message":
            if frame.get("text") == "mine":
                self._owner.mine = frame["id"]
            elif frame.get("text") == "next":
                self._owner.next_sent = trio.current_time()
        await self._client.send(frame)

    async def receive(self) -> dict[str, Any]:
        frame = await self._client.receive()
        if frame.get("type") == "accepted" and frame.get("id") == self._owner.mine:
            self._owner.accepted.set()
        return frame


class _Watching(WrappingConnector):
    wrapper = _Watched

    def __init__(self) -> None:
        self.mine: str | None = None
        self.accepted = trio.Event()
        self.next_sent: float | None = None


async def test_a_piped_line_merged_into_another_message_s_turn_waits_for_that_turn_only(
        rt, connect, is_frame, monkeypatch, autojump_clock) -> None:
    agent = HeldAgent("hold")
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", dispatch_mode="collect"), agent=agent)
    watching = _Watching()
    monkeypatch.setattr(_chat_ws, "GatewayClient", watching)
    out, err = Transcript(), Transcript()
    ended: list[float] = []

    async def lines() -> AsyncIterator[str]:
        yield "mine\n"
        yield "next\n"

    try:
        with fail_after_real(30):
            async with gateway.serving() as port, \
                    connect(f"ws://127.0.0.1:{port}", CONVERSATION) as other:
                held = await other.message("hold")
                await other.receive_until(is_frame("lifecycle", event="started",
                                                   message_id=held))

                async def other_device() -> None:
                    await watching.accepted.wait()  # "mine" waits behind "hold"
                    yours = await other.message("yours")  # merged into mine's turn: newest
                    [*_, accepted] = await other.receive_until(is_frame("accepted", id=yours))
                    assert accepted["outcome"] == "merged"
                    agent.release.set()
                    await other.receive_until(is_frame("lifecycle", event="completed",
                                                       message_id=yours))
                    ended.append(trio.current_time())

                options = ChatOptions(url=f"ws://127.0.0.1:{port}", token=TOKEN,
                                      conversation=CONVERSATION, interactive=False)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(other_device)
                    code = await chat_over_websocket(options, lines(), out=out, err=err)
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert code == 0, err.getvalue()
    # the merged turn's reply (both texts) before the next line's
    assert out.getvalue().splitlines() == ["hold", "mine", "", "yours", "next"]
    assert watching.next_sent is not None
    assert ended
    assert watching.next_sent - ended[0] < _chat_ws._SETTLE  # not the 30 s for an end unheard
