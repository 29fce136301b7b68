"""tidings chat (--url) reconnecting to a server whose session is behind what the chat has
seen: its database restored from an older copy (or moved without its ``-wal`` after a
crash), so it assigns again seqs the chat printed before. The chat printed a delivery only
when its seq was above the highest it had printed, so every new reply was acked (``sent``)
and never shown until the seqs passed that mark. The welcome's ``last_seq`` (the highest
seq the session has) below what the chat has seen says so: the mark goes back to it."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from typing import Any

import trio
from trio_websocket import WebSocketRequest, serve_websocket

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript


def _welcome(last_seq: int) -> str:
    return json.dumps({"type": "welcome", "protocol": 1, "conversation": "restored",
                       "session_id": "s1", "last_seq": last_seq, "heartbeat_s": 20,
                       "max_frame_bytes": 65536, "ack_window": 32, "replay": False})


def _delivery(seq: int, text: str) -> str:
    return json.dumps({"type": "delivery", "session_id": "s1", "seq": seq,
                       "delivery_id": f"d{seq}-{text}", "kind": "message", "text": text})


class _Restored:
    """First connection: three deliveries, acked, then the server fails (``1011``). Then
    the server is back on an older copy of its database: the session's last seq is 1, and
    the next reply is seq 2 again."""

    def __init__(self) -> None:
        self.connections = 0
        self.hellos: list[dict[str, Any]] = []

    async def handler(self, request: WebSocketRequest) -> None:
        ws = await request.accept()
        self.hellos.append(json.loads(await ws.get_message()))
        self.connections += 1
        if self.connections == 1:
            await ws.send_message(_welcome(0))
            for seq, text in enumerate(["one", "two", "three"], start=1):
                await ws.send_message(_delivery(seq, text))
            acked = 0
            while acked < 3:
                acked += json.loads(await ws.get_message()).get("type") == "ack"
            await ws.aclose(1011, "the server failed")
            return
        await ws.send_message(_welcome(1))
        await ws.send_message(_delivery(2, "a new reply"))
        await trio.sleep_forever()


async def test_a_server_behind_the_chat_has_its_new_deliveries_shown(
        monkeypatch, autojump_clock) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    server = _Restored()

    async def lines() -> AsyncIterator[str]:
        await trio.sleep_forever()
        yield ""

    async with trio.open_nursery() as nursery:
        listener = await nursery.start(serve_websocket, server.handler, "127.0.0.1", 0, None)
        options = ChatOptions(url=f"ws://127.0.0.1:{listener.port}",
                              token="gateway-test-token", conversation="restored",
                              interactive=True)
        nursery.start_soon(functools.partial(chat_over_websocket, options, lines(),
                                             out=out, err=err))
        with trio.fail_after(60):  # hang guard: before, the new reply was never shown
            await out.wait_for(lambda line: line == "a new reply")
        nursery.cancel_scope.cancel()
    assert out.getvalue().splitlines() == ["one", "two", "three", "a new reply"]
    assert server.hellos[1]["after_seq"] == 3
    assert ("tidings chat: the server's session is at seq 1, behind the 3 this chat has seen "
            "(its database restored from an older copy?): what it sends is shown from there"
            ) in err.getvalue().splitlines(), err.getvalue()


class _Replaced:
    """First connection: one delivery, acked, then the server fails (``1011``). Then it is
    back on another database, where the chat's session is none of the conversation's: a
    hello naming it is refused ``4000``; one naming none is welcomed in the session it has."""

    def __init__(self) -> None:
        self.hellos: list[dict[str, Any]] = []

    async def handler(self, request: WebSocketRequest) -> None:
        ws = await request.accept()
        hello = json.loads(await ws.get_message())
        self.hellos.append(hello)
        if len(self.hellos) == 1:
            await ws.send_message(_welcome(0))
            await ws.send_message(_delivery(1, "one"))
            while json.loads(await ws.get_message()).get("type") != "ack":
                pass
            await ws.aclose(1011, "the server failed")
        elif "session_id" in hello:
            await ws.aclose(4000, "bad hello: hello.session_id: not a session of this "
                                  "conversation")
        else:
            await ws.send_message(json.dumps(
                {"type": "welcome", "protocol": 1, "conversation": "restored",
                 "session_id": "s2", "last_seq": 0, "heartbeat_s": 20}))
            await ws.send_message(json.dumps(
                {"type": "delivery", "session_id": "s2", "seq": 1, "delivery_id": "e1",
                 "kind": "message", "text": "from the other database"}))
            await trio.sleep_forever()


async def test_a_server_that_does_not_know_the_chats_session_is_joined_afresh(
        monkeypatch, autojump_clock) -> None:
    # The reconnect's hello named the chat's session, which the server (its database
    # replaced, or restored from a copy older than the session) refused 4000; the chat took
    # that for a refusal of the person's own flags and ended (exit 1), though a hello naming
    # no session would be welcomed.
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    out, err = Transcript(), Transcript()
    server = _Replaced()

    async def lines() -> AsyncIterator[str]:
        await trio.sleep_forever()
        yield ""

    async with trio.open_nursery() as nursery:
        listener = await nursery.start(serve_websocket, server.handler, "127.0.0.1", 0, None)
        options = ChatOptions(url=f"ws://127.0.0.1:{listener.port}",
                              token="gateway-test-token", conversation="restored",
                              interactive=True)
        ended: list[int] = []
        done = trio.Event()

        async def chat() -> None:
            ended.append(await chat_over_websocket(options, lines(), out=out, err=err))
            done.set()

        async def shown() -> None:
            await out.wait_for(lambda line: line == "from the other database")
            done.set()

        nursery.start_soon(chat)
        nursery.start_soon(shown)
        with trio.fail_after(60):  # hang guard
            await done.wait()
        nursery.cancel_scope.cancel()
    assert not ended, err.getvalue()
    assert out.getvalue().splitlines() == ["one", "from the other database"]
    assert [("session_id" in hello) for hello in server.hellos] == [False, True, False]
    assert ("tidings chat: connection closed (4000): bad hello: hello.session_id: not a "
            "session of this conversation (its database replaced, or restored from an older "
            "copy?): going on in the session it has; reconnecting"
            ) in err.getvalue().splitlines(), err.getvalue()
