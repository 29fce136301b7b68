"""``tidings chat --url``'s reconnect schedule, as the README's quickstart gives it: up to 5
reconnects in a row, waiting 0.5 s, then twice as long each time (8 s at most); a connection
that stays up 10 s starts a fresh count, so a server that drops the chat right after
``welcome`` ends it (exit 1) and one that drops it now and then does not. A connection that
dies without a close counts as a drop once nothing has come on it for twice the server's
``heartbeat_s`` (40 s by default).

A stand-in ``GatewayClient`` (no sockets: the waits are the mock clock's) welcomes every
connection and drops it ``up`` seconds later, or never says another word (``up`` None)."""

from __future__ import annotations

import io
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tidings.channels import GatewayClosed
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

URL = "ws://stand-in:8765"


class Dropping:
    """A connection of :class:`DroppingServer`: welcomed, silent, closed ``4009`` after
    ``up`` seconds (None: never), its pings counted and never answered."""

    def __init__(self, up: float | None, welcome: dict[str, Any]) -> None:
        self.welcome = {"type": "welcome", "protocol": 1, "session_id": "s1", "last_seq": 0,
                        "conversation": "flap", **welcome}
        self.session_id = "s1"
        self.last_heard = trio.current_time()
        self.up = up
        self.pings: list[float] = []

    async def receive(self) -> dict[str, Any]:
        if self.up is None:
            await trio.sleep_forever()
        await trio.sleep(self.up)
        raise GatewayClosed(4009, "too slow")

    async def send(self, frame: dict[str, Any]) -> None:
        assert frame == {"type": "ping"}, f"nothing else to send, got {frame}"
        self.pings.append(trio.current_time())
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


class DroppingServer:
    """``GatewayClient`` as the chat uses it, recording when each connection was opened."""

    def __init__(self, up: float | None, welcome: dict[str, Any] | None = None) -> None:
        self.up = up
        self.welcome = {"heartbeat_s": 3600} if welcome is None else welcome
        self.opened: list[float] = []
        self.connections: list[Dropping] = []

    @asynccontextmanager
    async def connect(self, url: str, **_: Any) -> AsyncIterator[Dropping]:
        assert url == URL
        self.opened.append(trio.current_time())
        self.connections.append(Dropping(self.up, self.welcome))
        await trio.lowlevel.checkpoint()
        yield self.connections[-1]


async def _never_ends() -> AsyncIterator[str]:
    await trio.sleep_forever()
    yield ""


async def _chat(server: DroppingServer, monkeypatch: pytest.MonkeyPatch, *,
                for_s: float) -> tuple[int | None, str]:
    """Chat with *server* for *for_s* seconds at most: the exit code (None: still chatting)
    and what was said on stderr."""
    monkeypatch.setattr(_chat_ws, "GatewayClient", server)
    err = io.StringIO()
    options = ChatOptions(url=URL, token="gateway-test-token", conversation="flap",
                          interactive=False)
    code: int | None = None
    with trio.move_on_after(for_s):
        code = await chat_over_websocket(options, _never_ends(), out=io.StringIO(), err=err)
    return code, err.getvalue()


def _gaps(server: DroppingServer) -> list[float]:
    """The seconds between one connection's drop and the next connection."""
    assert server.up is not None
    return [round(later - earlier - server.up, 6)
            for earlier, later in zip(server.opened, server.opened[1:], strict=False)]


@pytest.mark.parametrize("up", [0.0, 9.9])
async def test_drops_before_10_s_up_are_retried_5_times_waiting_0_5_s_doubling_to_8(
        up: float, monkeypatch: pytest.MonkeyPatch, autojump_clock: Any) -> None:
    server = DroppingServer(up)
    code, said = await _chat(server, monkeypatch, for_s=600)
    assert code == 1, said
    assert _gaps(server) == [0.5, 1.0, 2.0, 4.0, 8.0]
    reconnects = [line for line in said.splitlines() if " of 5: waiting up to " in line]
    assert [line.split(":")[1].strip() for line in reconnects] == [
        f"reconnect {n} of 5" for n in range(1, 6)]
    assert said.splitlines()[-1] == ("tidings chat: connection closed (4009): too slow; gave "
                                     "up after 5 reconnects")


async def test_a_connection_up_10_s_starts_a_fresh_count(
        monkeypatch: pytest.MonkeyPatch, autojump_clock: Any) -> None:
    server = DroppingServer(10.0)
    code, said = await _chat(server, monkeypatch, for_s=200)
    assert code is None, said  # still chatting: never gave up
    assert len(server.opened) > 2 * _chat_ws._RECONNECTS
    assert set(_gaps(server)) == {0.5}  # each drop is the first of a fresh count
    assert "gave up" not in said
    assert "reconnect 2 of 5" not in said


@pytest.mark.parametrize(("welcome", "heartbeat_s"), [
    ({"heartbeat_s": 5}, 5.0),
    ({}, 20.0),  # a welcome that says none: GatewayConfig's default, 40 s in all
    ({"heartbeat_s": "soon"}, 20.0),
])
async def test_a_connection_silent_for_twice_heartbeat_s_is_a_drop(
        welcome: dict[str, Any], heartbeat_s: float, monkeypatch: pytest.MonkeyPatch,
        autojump_clock: Any) -> None:
    server = DroppingServer(None, welcome)
    code, said = await _chat(server, monkeypatch, for_s=2 * heartbeat_s + 0.5 + 0.1)
    assert code is None, said
    first, second = server.opened
    assert server.connections[0].pings == [first + heartbeat_s]  # pinged once, unanswered
    assert second - first == 2 * heartbeat_s + 0.5  # the drop, then the first reconnect's wait
    assert (f"connection closed (1006): nothing from the server for {2 * heartbeat_s:g} s, a "
            "ping unanswered") in said
