"""A message over ``max_frame_bytes`` (but within what the websocket takes) is refused
``frame_too_big`` with its ``id`` as the error's ``ref``, as every other refusal of a message
is: a client that waits for each message's ``accepted`` or its refusal (README: ``ref``, the
refused frame's id) otherwise waited for good on this one."""

from __future__ import annotations

import json

import pytest
import trio


@pytest.mark.parametrize("as_bytes", [False, True])
async def test_a_message_over_the_frame_limit_is_refused_with_its_id(
        rt, serve_gateway, connect, as_bytes) -> None:
    frame = json.dumps({"type": "message", "id": "long-1", "text": "x" * 2000})
    async with serve_gateway(rt, max_frame_bytes=1024) as (_gateway, url), \
            connect(url, "alpha") as client:
        await client.ws.send_message(frame.encode() if as_bytes else frame)
        with trio.fail_after(10):
            error = await client.receive()
    assert (error["type"], error["code"], error.get("ref")) == ("error", "frame_too_big",
                                                                "long-1")


async def test_a_frame_over_the_limit_with_no_id_still_gets_frame_too_big(
        rt, serve_gateway, connect) -> None:
    async with serve_gateway(rt, max_frame_bytes=1024) as (_gateway, url), \
            connect(url, "alpha") as client:
        for raw in ("x" * 2000, json.dumps({"type": "ping", "pad": "x" * 2000}),
                    json.dumps({"type": "message", "id": 7, "text": "x" * 2000})):
            await client.ws.send_message(raw)
            with trio.fail_after(10):
                error = await client.receive()
            assert (error["type"], error["code"]) == ("error", "frame_too_big")
            assert "ref" not in error
