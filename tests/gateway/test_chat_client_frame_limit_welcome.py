"""The terminal client (tidings chat without --local) takes the frame limit it checks lines
against from ``welcome``'s ``max_frame_bytes``; a welcome whose value is no limit (absent: an
older server; a boolean, zero, negative, NaN, a string, a float) is taken as
:class:`GatewayConfig`'s default (65536), as ``rate`` and ``burst`` are. Before, ``true``,
``0`` or a negative number refused every line, and NaN or a string let any line through (one
over four times the server's real limit closes the connection, 1009)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest
import trio

from tidings.channels import GatewayClient, GatewayConfig
from tidings.supervisor import _chat_limits, _chat_ws
from tidings.supervisor._chat_ws import ChatOptions, chat_over_websocket

from .conftest import Transcript

_MISSING = object()
_DEFAULT = attrs.fields(GatewayConfig).max_frame_bytes.default


class _Welcome:
    """What :func:`_chat_limits.too_big` reads of a client: its ``welcome``."""

    def __init__(self, limit: Any) -> None:
        self.welcome = {} if limit is _MISSING else {"max_frame_bytes": limit}


_BAD = [_MISSING, True, False, 0, -1, float("nan"), float("inf"), "65536", 1000.0, None]
_IDS = ["absent", "true", "false", "zero", "negative", "nan", "inf", "string", "float", "null"]


@pytest.mark.parametrize("limit", _BAD, ids=_IDS)
def test_a_welcome_without_a_usable_frame_limit_checks_lines_against_the_default(
        limit: Any) -> None:
    client = _Welcome(limit)
    assert _chat_limits.too_big(client, {"type": "message", "text": "hi", "id": "m1"}) is None
    refused = _chat_limits.too_big(client, {"type": "message", "text": "x" * _DEFAULT, "id": "m2"})
    assert refused is not None
    assert refused == (f"the line is over {_DEFAULT} bytes as a frame (the server's "
                       "max_frame_bytes)")


def test_a_usable_frame_limit_is_the_servers() -> None:
    client = _Welcome(10)
    refused = _chat_limits.too_big(client, {"type": "message", "text": "hi", "id": "m1"})
    assert refused is not None
    assert refused == "the line is over 10 bytes as a frame (the server's max_frame_bytes)"
    assert _chat_limits.too_big(_Welcome(10 ** 400), {"type": "message", "text": "x" * _DEFAULT,
                                                    "id": "m2"}) is None


class _Welcomed:
    """``GatewayClient.connect`` whose welcome says ``max_frame_bytes`` is *limit*."""

    def __init__(self, limit: Any) -> None:
        self.limit = limit

    @asynccontextmanager
    async def connect(self, *args: Any, **kwargs: Any) -> AsyncIterator[GatewayClient]:
        async with GatewayClient.connect(*args, **kwargs) as client:
            client.welcome["max_frame_bytes"] = self.limit
            yield client


@pytest.mark.parametrize("limit", [True, 0], ids=["true", "zero"])
async def test_a_chat_whose_welcome_has_no_usable_frame_limit_sends_its_lines(
        rt, serve_gateway, monkeypatch, limit: Any) -> None:
    monkeypatch.setattr(_chat_ws, "GatewayClient", _Welcomed(limit))
    out, err = Transcript(), Transcript()
    async with serve_gateway(rt) as (_gateway, url):
        async def lines() -> AsyncIterator[str]:
            yield "one\n"
            yield "two\n"

        options = ChatOptions(url=url, token="gateway-test-token", conversation="frame-limit",
                              interactive=False)
        with trio.fail_after(20):
            code = await chat_over_websocket(options, lines(), out=out, err=err)
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines() == ["one", "two"]
