"""``tidings chat --url`` with piped input, against a gateway whose ``duplicate`` answer has no
``running`` field (one from before that field): a line merged into a waiting turn whose frames
carry another message's id is asked about (its id again, empty text) once no turn runs. Such
a gateway's answer does not say whether that turn has ended: taken for "ended", the chat sent
its next line while the line's turn was still to run. It must wait on, as it did before it
asked.

A real gateway on the mock clock, its ``accepted`` frames stripped of ``running``; the next
turn's ``started`` is read only once the chat has asked (a chat that reads slowly)."""

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

CONVERSATION = "older"


class _Older(ClientWrapper):
    """The chat's connection to an older gateway: no ``running`` in ``accepted``. Records
    what the chat sent and heard, in order."""

    async def send(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "message":
            text = frame.get("text")
            if text == "mine":
                self._owner.mine = frame["id"]
            elif text == "":
                self._owner.asked.set()
            self._owner.events.append(f"sent {text}")
        await self._client.send(frame)

    async def receive(self) -> dict[str, Any]:
        frame = await self._client.receive()
        owner = self._owner
        if frame.get("type") == "lifecycle" and frame.get("event") == "started" \
                and frame.get("message_id") != owner.held:
            await owner.asked.wait()  # read slowly: the chat saw no turn run, and asked
        if frame.get("type") == "lifecycle" and frame.get("event") == "completed":
            owner.events.append(f"completed {frame.get('message_id')}")
        if frame.get("type") == "accepted":
            frame = {key: value for key, value in frame.items() if key != "running"}
            if frame.get("id") == owner.mine and not owner.accepted.is_set():
                owner.accepted.set()
        return frame


class _Connecting(WrappingConnector):
    wrapper = _Older

    def __init__(self) -> None:
        self.held: str | None = None
        self.mine: str | None = None
        self.accepted = trio.Event()
        self.asked = trio.Event()
        self.events: list[str] = []


async def test_a_duplicate_without_running_is_not_taken_for_the_turn_s_end(
        rt, connect, is_frame, monkeypatch, autojump_clock) -> None:
    agent = HeldAgent("hold")
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", dispatch_mode="collect"), agent=agent)
    connecting = _Connecting()
    monkeypatch.setattr(_chat_ws, "GatewayClient", connecting)
    out, err = Transcript(), Transcript()

    async def lines() -> AsyncIterator[str]:
        yield "mine\n"
        yield "next\n"

    try:
        with fail_after_real(30):
            async with gateway.serving() as port, \
                    connect(f"ws://127.0.0.1:{port}", CONVERSATION) as other:
                connecting.held = await other.message("hold")
                await other.receive_until(is_frame("lifecycle", event="started",
                                                   message_id=connecting.held))

                async def other_device() -> None:
                    await connecting.accepted.wait()  # "mine" waits behind "hold"
                    yours = await other.message("yours")  # merged into mine's turn: newest
                    [*_, accepted] = await other.receive_until(is_frame("accepted", id=yours))
                    assert accepted["outcome"] == "merged"
                    agent.release.set()

                options = ChatOptions(url=f"ws://127.0.0.1:{port}", token=TOKEN,
                                      conversation=CONVERSATION, interactive=False)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(other_device)
                    code = await chat_over_websocket(options, lines(), out=out, err=err)
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert code == 0, err.getvalue()
    assert connecting.asked.is_set()
    events = connecting.events
    ends = [index for index, event in enumerate(events)
            if event.startswith("completed ") and event != f"completed {connecting.held}"]
    assert ends, events
    # the next line only after the merged turn (mine's) ended
    assert events.index("sent next") > ends[0], events
