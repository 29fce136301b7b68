"""A first frame over the hello's allowance (64 KiB, or ``max_frame_bytes`` when larger) is
refused for its size, by name: it was closed ``4001`` 'the first frame must be a hello with a
token', false of a hello that had both, and the client could not tell what to change."""

from __future__ import annotations

import json

import trio
from trio_websocket import ConnectionClosed

from tidings.channels._gateway_client import open_transport
from tidings.channels._gateway_frames import HELLO_MAX_BYTES

from .conftest import TOKEN


async def _first_close(url: str, frame: str | bytes) -> tuple[int, str]:
    async with open_transport(url) as ws:
        await ws.send_message(frame)
        with trio.fail_after(10):
            try:
                message = await ws.get_message()
            except ConnectionClosed as exc:
                return exc.reason.code, exc.reason.reason or ""
        raise AssertionError(f"expected a close, got {message!r}")


def _hello(token: str, size: int) -> str:
    hello = {"type": "hello", "token": token, "conversation": "alpha", "protocol": 1,
             "pad": ""}
    hello["pad"] = "x" * (size - len(json.dumps(hello)))
    text = json.dumps(hello)
    assert len(text) == size
    return text


async def test_a_hello_over_its_allowance_is_refused_for_its_size(rt, serve_gateway) -> None:
    async with serve_gateway(rt) as (_gateway, url):
        for token in (TOKEN, "wrong-token-123"):  # the same answer: nothing of the token shown
            for frame in (_hello(token, HELLO_MAX_BYTES + 1),
                          _hello(token, HELLO_MAX_BYTES + 1).encode()):
                code, reason = await _first_close(url, frame)
                assert (code, reason) == (4001, f"unauthorized: the hello is over "
                                                f"{HELLO_MAX_BYTES} bytes")
        assert not await rt.store.read(lambda conn: conn.execute(
            "SELECT session_id FROM sessions").fetchall())


async def test_a_hello_of_its_allowance_is_admitted(rt, serve_gateway) -> None:
    async with serve_gateway(rt) as (_gateway, url), open_transport(url) as ws:
        await ws.send_message(_hello(TOKEN, HELLO_MAX_BYTES))
        with trio.fail_after(10):
            assert json.loads(await ws.get_message())["type"] == "welcome"


async def test_a_larger_frame_limit_is_the_hello_s_allowance(rt, serve_gateway) -> None:
    limit = 2 * HELLO_MAX_BYTES
    async with serve_gateway(rt, max_frame_bytes=limit) as (_gateway, url):
        assert await _first_close(url, _hello(TOKEN, limit + 1)) == (
            4001, f"unauthorized: the hello is over {limit} bytes")
