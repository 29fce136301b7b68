"""The terminal client (tidings chat without --local) keeps to the server's ``rate`` / ``burst``
(announced in ``welcome``): lines pasted faster, or the unanswered lines it sends again after a
reconnect, are paced, never closed ``4029`` (flooding). Before, a paste over ``burst`` lines was
closed 4029, and the resend after the reconnect could flood again, each reconnect counted
towards giving up."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from tidings.channels import GatewayClient
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript

LINES = [f"line {i}" for i in range(12)]


class _Watched:
    """A ``GatewayClient`` whose owner sees the ``accepted`` frames, and whose first connection
    (with ``swallow``) sends no message: it drops them all, then is closed ``4009``."""

    def __init__(self, client: GatewayClient, owner: Watching, first: bool) -> None:
        self._client = client
        self._owner = owner
        self._first = first

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def send(self, frame: dict[str, Any]) -> None:
        owner = self._owner
        if self._first and owner.swallow and frame.get("type") == "message":
            owner.swallowed += 1
            if owner.swallowed == len(LINES):
                [conn] = owner.gateway.hubs[owner.gateway.conversation_named("pace").key] \
                    .connections
                conn.kill(4009, "too slow")
            await trio.lowlevel.checkpoint()
            return
        await self._client.send(frame)

    async def receive(self) -> dict[str, Any]:
        frame = await self._client.receive()
        if frame.get("type") == "accepted" and frame.get("outcome") != "refused":
            self._owner.accepted.add(frame["id"])
            if len(self._owner.accepted) == len(LINES):
                self._owner.all_accepted.set()
        return frame


class Watching:
    def __init__(self, gateway: Any, *, swallow: bool) -> None:
        self.gateway, self.swallow = gateway, swallow
        self.swallowed = 0
        self.connects = 0
        self.accepted: set[str] = set()
        self.all_accepted = trio.Event()

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        self.connects += 1
        async with GatewayClient.connect(*args, **kwargs) as client:
            yield _Watched(client, self, self.connects == 1)


async def _chat(rt: Any, serve_gateway: Any, monkeypatch: Any, *, swallow: bool
                ) -> tuple[int, str]:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    err = Transcript()
    async with serve_gateway(rt, rate=1, burst=5) as (gateway, url):
        watching = Watching(gateway, swallow=swallow)
        monkeypatch.setattr(_chat_ws, "GatewayClient", watching)

        async def lines() -> AsyncIterator[str]:
            for line in LINES:  # pasted: as fast as the client takes them
                yield f"{line}\n"
            await watching.all_accepted.wait()

        options = ChatOptions(url=url, token="gateway-test-token", conversation="pace",
                              interactive=True)
        with trio.fail_after(600):
            code = await chat_over_websocket(options, lines(), out=Transcript(), err=err)
    assert len(watching.accepted) == len(LINES)
    # Without the URL: its random port (ws://127.0.0.1:40297) held the "4029" looked for.
    return code, err.getvalue().replace(url, "<url>")


async def test_lines_pasted_faster_than_the_servers_rate_are_paced(
        rt, serve_gateway, monkeypatch, autojump_clock) -> None:
    code, err = await _chat(rt, serve_gateway, monkeypatch, swallow=False)
    assert code == 0, err
    assert "4029" not in err
    assert "reconnecting" not in err


async def test_lines_sent_again_after_a_reconnect_are_paced(
        rt, serve_gateway, monkeypatch, autojump_clock) -> None:
    code, err = await _chat(rt, serve_gateway, monkeypatch, swallow=True)
    assert code == 0, err
    assert "4029" not in err
    assert err.count("reconnecting") == 1, err  # the 4009 that cut the lines
    assert "(4009)" in err
