"""``tidings chat --url`` follows the session the server makes current, not the session of
whatever frame came last. After ``/new`` the old session's running turn goes on beside the
new one: its lifecycle frames and its reply come after the new session's first frames. The
chat took its session from each of them, so it believed it was back in the old session: a
piped command's answer (written in the current session) was synced in the old one, found
caught up at once, and the chat went on (here: ended at the end of input) before the answer
was printed.

A real gateway on the mock clock; the agent's ``slow`` turn waits for the test. The chat's
connection holds the ``/status`` answer back until a ``synced`` that covers it came: so the
chat prints it only if it waits for it in the right session. (And a piped line that ran in
the old session, queued there before another device's ``/new``, waits for its reply there.)"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio

from tidings.channels import ChannelConfig, GatewayChannel, GatewayConfig
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from ..real_time import fail_after_real
from .chat_doubles import ClientWrapper, HeldAgent, WrappingConnector
from .conftest import TOKEN, Transcript

CONVERSATION = "follow"


class _HoldsAnswer(ClientWrapper):
    """The chat's connection: a delivery its owner ``holds`` is passed on only right after a
    ``synced`` of its session that covers its seq (a delivery may come after the ``synced``
    that counts it: the reason the chat waits for the seq it names), so the chat prints it
    only if it syncs the session it is in. Says when a line was ``queued`` and when the
    other device's ``slow`` turn ended."""

    def __init__(self, client: Any, owner: Any) -> None:
        super().__init__(client, owner)
        self._next: list[dict[str, Any]] = []

    async def receive(self) -> dict[str, Any]:
        owner = self._owner
        if self._next:
            return self._next.pop(0)
        while True:
            frame = await self._client.receive()
            if frame.get("type") == "delivery" and owner.holds(frame):
                owner.held = frame
                continue
            held = owner.held
            if frame.get("type") == "synced" and held is not None \
                    and frame.get("session_id") == held["session_id"] \
                    and frame.get("last_seq", 0) >= held["seq"]:
                owner.held = None
                self._next.append(held)
            if frame.get("type") == "accepted" and frame.get("outcome") == "queued":
                owner.queued.set()
            if frame.get("type") == "lifecycle" and frame.get("event") == "completed" \
                    and frame.get("message_id") == owner.slow:
                owner.slow_ended.set()
            return frame


class _Holding(WrappingConnector):
    wrapper = _HoldsAnswer

    def __init__(self, holds: Callable[[dict[str, Any]], bool]) -> None:
        self.holds = holds
        self.held: dict[str, Any] | None = None
        self.slow: str | None = None
        self.slow_ended = trio.Event()
        self.queued = trio.Event()


async def test_a_piped_command_after_new_is_synced_in_the_new_session_not_the_old_turns(
        rt, serve_gateway, connect, is_frame, monkeypatch, autojump_clock) -> None:
    agent = HeldAgent("slow")
    holding = _Holding(lambda frame: frame.get("command") == "status")
    monkeypatch.setattr(_chat_ws, "GatewayClient", holding)
    out, err = Transcript(), Transcript()
    with fail_after_real(30):
        async with serve_gateway(rt, agent=agent) as (_gateway, url), \
                connect(url, CONVERSATION) as other:
            holding.slow = await other.message("slow")  # runs on in the old session
            await other.receive_until(is_frame("lifecycle", event="started",
                                               message_id=holding.slow))

            async def lines() -> AsyncIterator[str]:
                yield "/new\n"
                yield "hi\n"
                await out.wait_for(lambda line: line == "hi")
                agent.release.set()  # the old session's turn ends after the new one's
                await holding.slow_ended.wait()
                await out.wait_for(lambda line: line == "slow")
                yield "/status\n"

            options = ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION,
                                  interactive=False)
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    shown = out.getvalue().splitlines()
    assert shown[:3] == ["* Started a new session.", "hi", "slow"], shown
    assert holding.held is None, "the /status answer was never synced in its session"
    assert len(shown) > 3, shown
    assert shown[3].startswith("* Session: "), shown  # the /status answer


async def test_a_piped_line_whose_turn_new_left_in_the_old_session_waits_for_its_reply_there(
        rt, connect, is_frame, monkeypatch, autojump_clock) -> None:
    # Queued behind another device's turn, the line runs in the old session after that
    # device's /new: its reply is written there, not in the current session.
    agent = HeldAgent("slow")
    gateway = GatewayChannel(rt, GatewayConfig(token=TOKEN, port=0),
                             ChannelConfig("gateway", dispatch_mode="followup"), agent=agent)
    holding = _Holding(lambda frame: frame.get("text") == "mine")
    monkeypatch.setattr(_chat_ws, "GatewayClient", holding)
    out, err = Transcript(), Transcript()
    try:
        with fail_after_real(30):
            async with gateway.serving() as port, \
                    connect(f"ws://127.0.0.1:{port}", CONVERSATION) as other:
                url = f"ws://127.0.0.1:{port}"
                slow = await other.message("slow")
                await other.receive_until(is_frame("lifecycle", event="started",
                                                   message_id=slow))

                async def other_device() -> None:
                    await holding.queued.wait()  # the chat's line waits behind slow
                    await other.message("/new")
                    await other.receive_until(is_frame("delivery", command="new"))
                    agent.release.set()

                async def lines() -> AsyncIterator[str]:
                    yield "mine\n"

                options = ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION,
                                      interactive=False)
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(other_device)
                    code = await chat_over_websocket(options, lines(), out=out, err=err)
    finally:
        with trio.CancelScope(shield=True):
            await gateway.aclose()
    assert code == 0, err.getvalue()
    assert holding.held is None, "the reply was never synced in its session"
    assert out.getvalue().splitlines() == ["* Started a new session.", "slow", "mine"]


class _Recording(WrappingConnector):
    """Each connection's hello (what ``connect`` was given) and welcome."""

    def __init__(self) -> None:
        self.hellos: list[dict[str, Any]] = []
        self.welcomes: list[dict[str, Any]] = []
        self.connected = trio.Event()

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.hellos.append(kwargs)
        async with super().connect(*args, **kwargs) as client:
            self.welcomes.append(client.welcome)
            self.connected.set()
            self.connected = trio.Event()
            yield client


async def test_a_reconnect_after_resume_names_the_resumed_session(
        rt, serve_gateway, monkeypatch) -> None:
    # The session /resume made current is one the chat left (by /new): its answer, written
    # there, is what says it is current again.
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    recording = _Recording()
    monkeypatch.setattr(_chat_ws, "GatewayClient", recording)
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            yield "/new\n"
            yield "two\n"
            yield f"/resume {recording.welcomes[0]['session_id']}\n"
            await out.wait_for(lambda line: line.startswith("* Resumed session"))
            reconnected = recording.connected
            [conn] = gateway.hubs[gateway.conversation_named(CONVERSATION).key].connections
            conn.kill(4009, "too slow")
            await reconnected.wait()
            yield "three\n"

        options = ChatOptions(url=url, token=TOKEN, conversation=CONVERSATION,
                              interactive=False)
        with trio.fail_after(20):  # real time: no mock clock here
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    first = recording.welcomes[0]["session_id"]
    assert [hello.get("session_id") for hello in recording.hellos] == [None, first]
    assert recording.welcomes[1]["session_id"] == first
    shown = out.getvalue().splitlines()
    assert shown == ["one", "* Started a new session.", "two",
                     f"* Resumed session {first}.", "three"], shown
