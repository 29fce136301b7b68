"""tidings chat (--url) when the server goes silent without closing the connection (its host
frozen or paused, a network that drops the connection without a word, a laptop that slept):
nothing ever came, and the chat never noticed. A piped line then waited out its 30 s and the
next went into the same dead connection, the chat ending 0 with none answered; typed into, it
sat there for good. The gateway pings a client it has not heard from for ``heartbeat_s`` and
answers a ping at once, so the chat now pings a server it has not heard from for
``heartbeat_s``, and takes a connection on which nothing came for ``heartbeat_s`` more for one
that dropped: it reconnects."""

from __future__ import annotations

import functools
import io
import json
from collections.abc import AsyncIterator

import trio
from trio_websocket import ConnectionClosed, WebSocketRequest, serve_websocket

from tidings.supervisor import _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript

WELCOME = {"type": "welcome", "protocol": 1, "conversation": "quiet", "session_id": "s1",
           "last_seq": 0, "heartbeat_s": 5, "max_frame_bytes": 65536, "ack_window": 32,
           "replay": False}


async def _silent(request: WebSocketRequest) -> None:
    """Welcomes, then reads what it is sent and says nothing, pongs included."""
    ws = await request.accept()
    await ws.get_message()  # the hello
    await ws.send_message(json.dumps(WELCOME))
    try:
        while True:
            await ws.get_message()
    except ConnectionClosed:
        pass


async def test_a_server_that_goes_silent_is_taken_for_a_dropped_connection(
        monkeypatch, autojump_clock) -> None:
    monkeypatch.setattr(_chat_ws, "_BACKOFF", 0.0)
    err = Transcript()

    async def lines() -> AsyncIterator[str]:
        yield "hello\n"
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        server = await nursery.start(serve_websocket, _silent, "127.0.0.1", 0, None)
        options = ChatOptions(url=f"ws://127.0.0.1:{server.port}", token="gateway-test-token",
                              conversation="quiet", interactive=True)
        nursery.start_soon(functools.partial(chat_over_websocket, options, lines(),
                                             out=io.StringIO(), err=err))
        with trio.fail_after(3600):  # hang guard: before, it waited for ever
            # (and the next connection, welcomed and silent again, is found dead in turn)
            while err.getvalue().count("reconnecting\n") < 2:
                await err.changed.wait()
        nursery.cancel_scope.cancel()
    said = err.getvalue().splitlines()
    assert said[1] == ("tidings chat: connection closed (1006): nothing from the server for "
                       "10 s, a ping unanswered (a connection that died without a close); "
                       "reconnecting"), said


async def test_an_idle_chat_with_a_live_server_is_not_reconnected(
        rt, serve_gateway, autojump_clock) -> None:
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt, heartbeat_s=5.0) as (_gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            await out.wait_for(lambda line: line == "one")
            await trio.sleep(100)  # idle: pings and pongs only (20 heartbeats)
            yield "two\n"
            await out.wait_for(lambda line: line == "two")

        options = ChatOptions(url=url, token="gateway-test-token", conversation="idle",
                              interactive=True)
        with trio.fail_after(3600):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert "reconnecting" not in err.getvalue()
    assert out.getvalue().splitlines() == ["one", "two"]
