"""``tidings chat --url`` with piped input waits for each line's answer (README, Quickstart),
however long its turn runs, as ``--local`` does: the next line is sent once the turn has ended.
It waited 30 s at most, then sent the next line anyway; in the default ``steer`` dispatch mode
that line cancelled the turn still running (``(cancelled: steer)``), so piping two questions to
an agent that thinks for longer than that lost the first answer. The 30 s bound stays for what
may never end: an ``accepted`` that never comes, and a turn no lifecycle frame says runs (one
merged into another's, or one that ended while the chat was away).

A stand-in ``GatewayClient`` (no sockets: the turns run on the mock clock) plays a gateway in
``steer`` mode: a message whose text is a number of seconds runs a turn that long, then
replies ``done <text>``; a message sent while a turn runs cancels it, ``steer``."""

from __future__ import annotations

import io
import itertools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

URL = "ws://stand-in:8765"


class SteeringConnection:
    """One connection of :class:`SteeringServer`: what the chat sends is acted on at once,
    what it receives waits in :attr:`frames`."""

    def __init__(self, server: SteeringServer, nursery: trio.Nursery) -> None:
        self.server = server
        self.nursery = nursery
        self.welcome = {"type": "welcome", "protocol": 1, "session_id": "s1",
                        "last_seq": server.seq, "conversation": "long", "heartbeat_s": 3600}
        self.session_id = "s1"
        self.last_heard = trio.current_time()
        self.ids = itertools.count(1)
        self.to_client, self.frames = trio.open_memory_channel[dict[str, Any]](1000)

    def push(self, frame: dict[str, Any]) -> None:
        self.to_client.send_nowait(frame)

    def new_id(self) -> str:
        return f"line-{next(self.ids)}"

    async def ack(self, delivery_id: str) -> None:
        await self.send({"type": "ack", "delivery_ids": [delivery_id]})

    async def sync(self, session_id: str | None = None) -> None:
        await self.send({"type": "sync", "session_id": session_id})

    async def receive(self) -> dict[str, Any]:
        frame = await self.frames.receive()
        self.last_heard = trio.current_time()
        return frame

    async def send(self, frame: dict[str, Any]) -> None:
        await trio.lowlevel.checkpoint()
        kind = frame["type"]
        if kind == "sync":
            self.push({"type": "synced", "session_id": "s1", "last_seq": self.server.seq})
        elif kind == "message":
            self.server.sent.append(frame["text"])
            if self.server.running is not None:  # steer: the new message cancels it
                self.server.running.cancel()
            outcome = self.server.outcome(frame["text"])
            self.push({"type": "accepted", "id": frame["id"], "outcome": outcome})
            if outcome == "started":
                await self.nursery.start(self.turn, frame)
        elif kind != "ack":
            raise AssertionError(f"not expected: {frame}")

    async def turn(self, frame: dict[str, Any], task_status: Any) -> None:
        message_id = frame["id"]
        lifecycle = {"type": "lifecycle", "session_id": "s1", "message_id": message_id}
        with trio.CancelScope() as scope:
            self.server.running = scope
            self.push({**lifecycle, "event": "started"})
            task_status.started()
            await trio.sleep(float(frame["text"]))
            self.server.seq += 1
            self.push({"type": "delivery", "session_id": "s1", "seq": self.server.seq,
                       "delivery_id": f"d{self.server.seq}", "kind": "final",
                       "text": f"done {frame['text']}"})
            self.push({**lifecycle, "event": "completed"})
        if scope.cancelled_caught:
            self.push({**lifecycle, "event": "cancelled", "reason": "steer"})
        self.server.running = None

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()


class SteeringServer:
    """``GatewayClient`` as the chat uses it: the gateway's side of every connection."""

    def __init__(self) -> None:
        self.seq = 0
        self.sent: list[str] = []
        self.running: trio.CancelScope | None = None

    def outcome(self, text: str) -> str:
        """``started`` for a number of seconds; ``merged`` (no turn of its own, so no lifecycle
        frame: as one merged into another's turn) for anything else."""
        try:
            float(text)
        except ValueError:
            return "merged"
        return "started"

    @asynccontextmanager
    async def connect(self, url: str, **_: Any) -> AsyncIterator[SteeringConnection]:
        assert url == URL
        async with trio.open_nursery() as nursery:
            yield SteeringConnection(self, nursery)
            nursery.cancel_scope.cancel()


async def _piped(lines: list[str], monkeypatch: pytest.MonkeyPatch
                 ) -> tuple[int, list[str], SteeringServer]:
    server = SteeringServer()
    monkeypatch.setattr(_chat_ws, "GatewayClient", server)
    out, err = io.StringIO(), io.StringIO()

    async def piped() -> AsyncIterator[str]:
        for line in lines:
            yield f"{line}\n"

    options = ChatOptions(url=URL, token="gateway-test-token", conversation="long",
                          interactive=False)
    with trio.fail_after(3600):
        code = await chat_over_websocket(options, piped(), out=out, err=err)
    assert code == 0, err.getvalue()
    return code, out.getvalue().splitlines(), server


async def test_a_piped_line_waits_for_a_turn_longer_than_30_s(
        monkeypatch: pytest.MonkeyPatch, autojump_clock: Any) -> None:
    started = trio.current_time()
    _, shown, server = await _piped(["95", "1"], monkeypatch)
    assert shown == ["done 95", "done 1"]  # not "(cancelled: steer)"
    assert server.sent == ["95", "1"]
    assert trio.current_time() - started == pytest.approx(96)


async def test_a_line_no_turn_is_heard_of_is_waited_for_30_s_at_most(
        monkeypatch: pytest.MonkeyPatch, autojump_clock: Any) -> None:
    started = trio.current_time()
    _, shown, server = await _piped(["merged away", "2"], monkeypatch)
    assert shown == ["done 2"]
    assert server.sent == ["merged away", "2"]
    assert trio.current_time() - started == pytest.approx(_chat_ws._SETTLE + 2)
