"""The terminal client (tidings chat without --local) keeps a bounded number of the message
ids the server answered (``accepted``, a refusal, a turn's end): only the line a piped chat
waits for needs its answer. Before, each message of the chat left an id in
``_State.accepted`` and ``_State.finished`` for as long as the chat lasted (a chat piped a
million lines kept a million ids)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
import trio
from trio_websocket import ConnectionClosed, WebSocketRequest, serve_websocket

from tidings.channels._gateway_frames import PROTOCOL_VERSION
from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript


async def _answering(request: WebSocketRequest) -> None:
    """A gateway stand-in: each message is accepted, its turn replies and completes; a sync is
    answered with what was delivered; every tenth message is refused instead."""
    ws = await request.accept()
    seq = 0
    try:
        await ws.get_message()  # the hello
        await ws.send_message(json.dumps({
            "type": "welcome", "protocol": PROTOCOL_VERSION, "session_id": "s", "last_seq": 0,
            "rate": 1e6, "burst": 1e6}))
        while True:
            frame = json.loads(await ws.get_message())
            kind = frame.get("type")
            if kind == "message" and frame["text"].endswith("0"):
                await ws.send_message(json.dumps({
                    "type": "error", "code": "bad_field", "message": "no", "ref": frame["id"]}))
            elif kind == "message":
                seq += 1
                for reply in ({"type": "accepted", "id": frame["id"], "outcome": "started"},
                              {"type": "delivery", "session_id": "s", "seq": seq,
                               "delivery_id": f"d{seq}", "text": frame["text"]},
                              {"type": "lifecycle", "event": "completed", "session_id": "s",
                               "message_id": frame["id"]}):
                    await ws.send_message(json.dumps(reply))
            elif kind == "sync":
                await ws.send_message(json.dumps({"type": "synced", "session_id": "s",
                                                  "last_seq": seq}))
    except ConnectionClosed:
        return


@pytest.mark.parametrize("interactive", [True, False])
async def test_the_ids_the_client_keeps_do_not_grow_with_the_chat(
        monkeypatch, interactive: bool) -> None:
    kept = 8
    monkeypatch.setattr(_chat_ws, "_IDS_KEPT", kept)
    states: list[Any] = []

    class _Watched(_chat_ws._State):
        def __init__(self) -> None:
            super().__init__()
            states.append(self)

    monkeypatch.setattr(_chat_ws, "_State", _Watched)
    out, err = Transcript(), Transcript()
    sizes: list[tuple[int, int]] = []
    count = 60

    async def lines() -> AsyncIterator[str]:
        for n in range(1, count + 1):
            yield f"line {n}\n"
            if states:
                sizes.append((len(states[0].accepted), len(states[0].finished)))

    async with trio.open_nursery() as nursery:
        listener = await nursery.start(serve_websocket, _answering, "127.0.0.1", 0, None)
        options = ChatOptions(url=f"ws://127.0.0.1:{listener.port}",
                              token="gateway-test-token", conversation="many",
                              interactive=interactive)
        code = None  # the chat did not end within the bound
        with trio.move_on_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
        nursery.cancel_scope.cancel()
    assert code == 0, err.getvalue()
    expected = [f"line {n}" if n % 10 else "! bad_field: no" for n in range(1, count + 1)]
    assert out.getvalue().splitlines() == expected
    [state] = states
    sizes.append((len(state.accepted), len(state.finished)))
    assert max(max(pair) for pair in sizes) <= kept, sizes
