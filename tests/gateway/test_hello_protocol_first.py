"""A hello is judged by its protocol version before its other fields: a client of another
version learns it must speak 1 (``4002``), not that a field it sent means something else
here (``4000``)."""

from __future__ import annotations

import json

import pytest
import trio
from trio_websocket import ConnectionClosed

from tidings.channels._gateway_client import open_transport

from .conftest import TOKEN


async def _close_of(url: str, hello: dict) -> tuple[int, str]:
    async with open_transport(url) as ws:
        await ws.send_message(json.dumps(hello))
        with trio.fail_after(10), pytest.raises(ConnectionClosed) as caught:
            await ws.get_message()
    return caught.value.reason.code, caught.value.reason.reason or ""


@pytest.mark.parametrize("fields", [
    {"after_seq": "latest"},  # another version's resume form
    {"conversation": {"name": "alpha"}},
    {"session_id": 7},
    {"client": ""},
])
async def test_a_hello_of_another_version_is_4002_whatever_its_other_fields(
        rt, serve_gateway, fields) -> None:
    hello = {"type": "hello", "token": TOKEN, "conversation": "alpha", "protocol": 2,
             **fields}
    async with serve_gateway(rt) as (_gateway, url):
        code, reason = await _close_of(url, hello)
    assert code == 4002, reason
    assert "this server speaks 1" in reason


async def test_a_version_1_hello_still_names_its_bad_field_4000(rt, serve_gateway) -> None:
    hello = {"type": "hello", "token": TOKEN, "conversation": "alpha", "protocol": 1,
             "after_seq": "latest"}
    async with serve_gateway(rt) as (_gateway, url):
        code, reason = await _close_of(url, hello)
    assert code == 4000
    assert "after_seq" in reason


@pytest.mark.parametrize("protocol", [
    pytest.param(None, id="missing"),
    pytest.param("1", id="a-string"),
    pytest.param(1.5, id="a-fraction"),
    pytest.param(True, id="a-bool"),
])
async def test_a_hello_without_an_integer_protocol_is_a_bad_hello_4000(
        rt, serve_gateway, protocol) -> None:
    """No version asked for is a malformed hello naming ``protocol`` (``4000``, as README's
    close codes say), not an unsupported version (``4002``: one the server does not speak)."""
    hello = {"type": "hello", "token": TOKEN, "conversation": "alpha"}
    if protocol is not None:
        hello["protocol"] = protocol
    async with serve_gateway(rt) as (_gateway, url):
        code, reason = await _close_of(url, hello)
    assert code == 4000, reason
    assert reason.startswith("bad hello: hello.protocol: "), reason
