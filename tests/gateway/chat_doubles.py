"""Doubles for tests of ``tidings chat --url`` (``supervisor/_chat_ws.py``) against a real
gateway: an agent that holds chosen turns, and a stand-in for ``GatewayClient`` that shows the
test what the chat sends and hears (``monkeypatch.setattr(_chat_ws, "GatewayClient", ...)``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, ClassVar

import trio

from tidings.channels import GatewayClient

__all__ = ["ClientWrapper", "HeldAgent", "HeldBackConnector", "WrappingConnector",
           "leave_a_turn_running"]


class HeldAgent:
    """Turns for the texts in *held* wait for :attr:`release`, then answer the text plus
    *suffix*; anything else is echoed at once. :attr:`holding` is set once a held turn waits
    (its ``started`` event comes earlier, before the turn has written its user message)."""

    def __init__(self, *held: str, suffix: str = "") -> None:
        self.held = held
        self.suffix = suffix
        self.release = trio.Event()
        self.holding = trio.Event()

    async def run(self, turn: Any) -> None:
        if turn.text in self.held:
            self.holding.set()
            await self.release.wait()
            await turn.send_chunk(f"{turn.text}{self.suffix}")
        else:
            await turn.send_chunk(turn.text)


async def leave_a_turn_running(other: GatewayClient,
                               is_frame: Callable[..., Callable[[dict[str, Any]], bool]],
                               agent: HeldAgent) -> str:
    """On another device: ``earlier`` (answered at once), then ``slow`` (held by *agent*: its
    turn started and the agent holds it), then ``/new``, which leaves that turn running in
    the session it leaves; returns that session's id (``o1``-``o3`` are the message ids).

    It returns once the agent holds the turn, not at its ``started`` frame: the turn writes
    its user message after that event, and a test that then closed a gate in the writer
    (``writer_gate``) held that write, the agent never ran, and the reply the test waited
    for never came (on a loaded machine, now and then)."""
    await other.message("earlier", message_id="o1")
    [*_, reply] = await other.receive_until(is_frame("delivery", kind="message"))
    await other.message("slow", message_id="o2")
    await other.receive_until(is_frame("lifecycle", event="started", message_id="o2"))
    await agent.holding.wait()
    await other.message("/new", message_id="o3")  # left, its turn running on
    await other.receive_until(is_frame("delivery", command="new"))
    return reply["session_id"]


class ClientWrapper:
    """A connected ``GatewayClient`` as the chat uses it, seen by the test: a subclass
    overrides :meth:`send` / :meth:`receive` and records into its *owner* (the connector);
    everything else is the client's own."""

    def __init__(self, client: GatewayClient, owner: Any) -> None:
        self._client = client
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def send(self, frame: dict[str, Any]) -> None:
        await self._client.send(frame)

    async def receive(self) -> dict[str, Any]:
        return await self._client.receive()


class WrappingConnector:
    """Stands in for ``GatewayClient`` in ``_chat_ws``: each ``connect`` opens a real client
    and yields it wrapped in :attr:`wrapper` (``wrapper(client, self)``)."""

    wrapper: ClassVar[type[ClientWrapper]] = ClientWrapper

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        async with GatewayClient.connect(*args, **kwargs) as client:
            yield self.wrapper(client, self)


class HeldBackConnector(WrappingConnector):
    """The chat's first connection is closed by the server once welcomed (as too slow); the
    reconnect waits for :attr:`go`, so a test can act while the chat is away."""

    def __init__(self, gateway: Any, conversation: str) -> None:
        self.gateway = gateway
        self.conversation = conversation
        self.connects = 0
        self.dropped = trio.Event()
        self.go = trio.Event()
        self.welcomed = trio.Event()

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.connects += 1
        if self.connects > 1:
            await self.go.wait()
        async with super().connect(*args, **kwargs) as client:
            if self.connects == 1:
                hub = self.gateway.hubs[self.gateway.conversation_named(self.conversation).key]
                for conn in hub.connections:
                    if conn.client == "tidings-chat":
                        conn.kill(4009, "too slow")
                self.dropped.set()
            else:
                self.welcomed.set()
            yield client
