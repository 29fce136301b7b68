"""A hello after the first frame is ``duplicate_hello`` whatever its fields: the error tells a
client what it did wrong (hello is only the first frame), not that a field of a hello it must
not send at all is bad."""

from __future__ import annotations

import pytest
import trio

from .conftest import TOKEN


@pytest.mark.parametrize("fields", [
    {"token": TOKEN, "conversation": "alpha", "protocol": 1},
    {"token": TOKEN, "conversation": "alpha", "protocol": 1, "after_seq": -1},
    {"token": TOKEN, "conversation": "", "protocol": 1},
    {"token": TOKEN, "conversation": "alpha", "protocol": 2},
    {"conversation": "alpha"},
])
async def test_a_second_hello_is_duplicate_hello_whatever_its_fields(
        rt, serve_gateway, connect, fields) -> None:
    async with serve_gateway(rt) as (_gateway, url), connect(url, "alpha") as client:
        await client.send({"type": "hello", **fields})
        with trio.fail_after(10):
            error = await client.receive()
        assert error["type"] == "error"
        assert error["code"] == "duplicate_hello", error
